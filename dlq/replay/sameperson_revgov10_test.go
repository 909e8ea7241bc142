package replay_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevGov10RequesterWhoseEmailChangedApprovesWithSecondIdentity
// (invariant 14, "a changed email"): separation of duties compares the
// approver with the requester's email as it was when the request was made
// (replay_requests.requester_email), never with what the requester's
// identity holds now. Dana requests with her first account (I1,
// oncall@example.com); her provider then verifies dana@example.com for I1
// (a renamed address, a merged account: the console records it in
// user_directory at the next refresh, and audits auth.identity_change).
// Her second account (I2, another issuer) also has dana@example.com,
// verified. At the approval both identities share a verified email, so
// they are one person, and I2 approving I1's request is approving her own:
// the console knows it (the directory entry of the requester's identity)
// and still records the approval, which completes the request.
func TestRevGov10RequesterWhoseEmailChangedApprovesWithSecondIdentity(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)

	id := b.seedItem(t, "email.send", "changed-email", nats.Header{dlq.HeaderOperationID: {"op-changed-email"}}, `{}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{}) // requested by oncall (I1) as oncall@example.com
	require.Equal(t, replaypolicy.SameOperation, req.Class)
	require.Equal(t, replay.StatusPendingApproval, req.Status)

	// I1's provider now says dana@example.com, verified (a refresh records it).
	nowI1 := oncall
	nowI1.Email, nowI1.EmailVerified = "dana@example.com", true
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: nowI1, Groups: []string{"quarantine:acme:oncall"}}))
	// Her second identity, at another issuer, with the same verified address.
	second := quarantine.Actor{Issuer: "https://github.example", Subject: "dana-gh", Email: "dana@example.com", EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: second, Groups: []string{"quarantine:acme:approver"}}))
	require.True(t, replaypolicy.SamePerson(nowI1, second), "the requester's identity and the approver share a verified email now")

	_, err := b.replays.Approve(ctx, req.ID, second, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err),
		"one person approved their own request: the requester's identity holds the approver's verified email now (%v)", err)
	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, got.Status, "a self-approval completed the request")
}
