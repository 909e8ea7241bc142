package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevFix10aFixMarkerBySecondAccountWhoseEmailBecameTheRequesters:
// FixedByRequester compares the requester as recorded and as the directory
// has them now (MayBeOne), but the fix marker's recorder only as recorded
// (FixRecordedBy; its "now" is passed as the zero Actor). The on-call's
// second identity records the fix under its old address; the directory now
// has that identity with the requester's verified address, so by the rule
// 4fa844a states (invariant 14 over time) the two are one person, and an
// approver with that identity would be refused. The marker still counts
// as someone else's: the schema_invalid item replays with no approver at
// all.
func TestRevFix10aFixMarkerBySecondAccountWhoseEmailBecameTheRequesters(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)

	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "fix-second",
		Class: "schema_invalid", Payload: []byte(`{"doc":1}`), At: time.Now().Add(-time.Hour)})

	second := quarantine.Actor{Issuer: "https://github.example", Subject: "oncall-gh", Email: "old-gh@example.com", EmailVerified: true}
	_, err := b.store.RecordFix(ctx, id, dlq.FixInput{Scope: dlq.FixItemType, FixedAt: time.Now().Add(-time.Minute), Ref: "v9.9.9"},
		second, quarantine.RequestMeta{}, time.Now())
	require.NoError(t, err)

	// The second identity's provider now says the on-call's own address (a refresh records it).
	secondNow := second
	secondNow.Email = oncall.Email
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: secondNow, Groups: []string{"quarantine:acme:oncall"}}))
	require.True(t, replaypolicy.SamePerson(secondNow, oncall), "precondition: the marker's recorder and the requester are one person now")

	req := b.request(t, []int64{id}, replay.SubmitInput{}) // by oncall
	require.Equal(t, 1, req.ItemCount)
	assert.Equal(t, replay.StatusPendingApproval, req.Status,
		"a schema_invalid item unlocked only by a fix marker of an identity the directory now says is the requester went without any approver")
}
