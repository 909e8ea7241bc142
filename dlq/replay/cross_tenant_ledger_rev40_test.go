package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// overlapping gives b the replay subject allowlist allow, in which tenant
// other may replay to acme's subjects, lets oncall act in acme and other,
// and sets APP's duplicate window to a second.
func overlapping(t *testing.T, b *replayBundle, allow, other string) {
	t.Helper()
	ctx := context.Background()
	subs, err := replay.ParseSubjectAllowlist(allow)
	require.NoError(t, err)
	cfg := b.config(t)
	cfg.Subjects = subs
	b.replays = replay.New(b.db.Pool, cfg)
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: oncall, Groups: []string{"quarantine:acme:oncall", "quarantine:" + other + ":oncall"}}))
	_, err = b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
}

// TestRev40ReplayOfTheMessageInAnotherTenantIsNotPublishedAgain: two
// tenants whose replay subjects overlap (globex may replay to app.acme.>),
// one message dead-lettered by a consumer of each. acme's dedupe replay is
// stored; once the window had passed, globex's replay of the same message
// id to the same subject was published again: the ledger was asked in the
// replaying tenant only. A message id on a subject is now asked in every
// tenant: the subject and the broker's window are no tenant's; the reason
// names no request of the other tenant.
func TestRev40ReplayOfTheMessageInAnotherTenantIsNotPublishedAgain(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	overlapping(t, b, "app.{tenant}.>, events.{tenant}.>, globex=app.acme.>", "globex")

	const id, subject = "rev40-x-1", "app.acme.analytics.event"
	acme := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: id, Subject: subject,
		Payload: []byte(`{"event":"viewed"}`), At: time.Now().Add(-2 * time.Hour)})
	globex := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{Tenant: "globex", ItemType: "analytics.event", MsgID: id, Subject: subject,
		Payload: []byte(`{"event":"viewed"}`), At: time.Now().Add(-2 * time.Hour)})

	first := b.request(t, []int64{acme}, replay.SubmitInput{})
	require.Equal(t, replaypolicy.Dedupe, first.Class)
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, first.ID, replay.StatusDone)
	require.Equal(t, 1, b.onSubject(t, subject))

	acmeStored := b.published(t)[id].Time
	wait.Until(t, "acme's replay out of the window", time.Minute, func() bool { return time.Since(acmeStored) > 2*time.Second })
	_, drafts := b.draft(t, oncall, globex)
	reason := b.itemsOf(t, drafts)[globex].SkipReason
	assert.Contains(t, reason, "already replayed by a replay request of another tenant", "the draft says it was replayed")
	assert.Contains(t, reason, "not published again, nor taken as replayed", "another tenant's replay makes no dead letter of globex's replayed (round 41)")
	assert.NotContains(t, reason, fmt.Sprintf("replay request %d", first.ID), "acme's request is named to no reader of globex's")
	second := b.request(t, []int64{globex}, replay.SubmitInput{})
	require.Equal(t, "globex", second.Tenant)
	assert.Equal(t, replay.StatusVoid, second.Status, "nothing to replay: %s", second.StatusReason)
	assert.Equal(t, 1, b.onSubject(t, subject), "message id %s published to %s twice (acme's replay, then globex's)", id, subject)
	status, _ := b.deadLetterStatus(t, globex, second.ID)
	assert.NotEqual(t, "replayed", status, "globex's dead letter taken as replayed by acme's replay")
}

// TestRev40ReplayOfTheMessageInTenantUnknownIsNotPublishedAgain: the same
// with tenant unknown, whose entry (unknown=...) the docs tell operators to
// add to replay its dead letters: every subject it may replay to is some
// real tenant's.
func TestRev40ReplayOfTheMessageInTenantUnknownIsNotPublishedAgain(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	overlapping(t, b, "app.{tenant}.>, unknown=app.>", "unknown")

	const id, subject = "rev40-u-1", "app.acme.analytics.event"
	acme := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: id, Subject: subject,
		Payload: []byte(`{"event":"viewed"}`), At: time.Now().Add(-2 * time.Hour)})
	first := b.request(t, []int64{acme}, replay.SubmitInput{})
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, first.ID, replay.StatusDone)
	require.Equal(t, 1, b.onSubject(t, subject))

	unk := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{Tenant: "unknown", ItemType: "analytics.event", MsgID: id, Subject: subject,
		Payload: []byte(`{"event":"viewed"}`), At: time.Now().Add(-2 * time.Hour)})
	acmeStored := b.published(t)[id].Time
	wait.Until(t, "acme's replay out of the window", time.Minute, func() bool { return time.Since(acmeStored) > 2*time.Second })
	second := b.request(t, []int64{unk}, replay.SubmitInput{})
	assert.Equal(t, replay.StatusVoid, second.Status, "nothing to replay: %s", second.StatusReason)
	assert.Equal(t, 1, b.onSubject(t, subject), "message id %s published to %s twice", id, subject)
}
