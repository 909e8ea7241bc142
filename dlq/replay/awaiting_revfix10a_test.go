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

// TestRevFix10aNavCountsRequestTheViewerMayNotApprove: 4fa844a made
// separation of duties compare the requester as the directory has them now
// (MayBeOne, RequesterNow) at approve, reject, settle and the worker; the
// navigation's count (Awaiting) still judges MayApprove with a request
// whose RequesterNow is never read (policyRequest of the scanned row), so
// it counts for the requester's second account the very request Approve
// refuses them ("the requester's account now has your email address"): the
// badge says one waits for them, the approval is forbidden.
func TestRevFix10aNavCountsRequestTheViewerMayNotApprove(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)

	id := b.seedItem(t, "email.send", "revfix10a-nav", nats.Header{dlq.HeaderOperationID: {"op-revfix10a-nav"}}, `{}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{}) // by oncall (I1)
	require.Equal(t, replaypolicy.SameOperation, req.Class)
	require.Equal(t, replay.StatusPendingApproval, req.Status)

	nowI1 := oncall
	nowI1.Email, nowI1.EmailVerified = "dana@example.com", true
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: nowI1, Groups: []string{"quarantine:acme:oncall"}}))
	second := quarantine.Actor{Issuer: "https://github.example", Subject: "dana-gh", Email: "dana@example.com", EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: second, Groups: []string{"quarantine:acme:approver"}}))

	_, err := b.replays.Approve(ctx, req.ID, second, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "precondition: Approve refuses the requester's second account (%v)", err)

	all := func(string, replaypolicy.Class) bool { return true }
	n, err := b.replays.Awaiting(ctx, mayScopes([]string{"acme"}, all), second, 10)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "the navigation counts as waiting for this viewer a request Approve forbids them (the requester's account now has their email)")
}
