package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevGov13RequestAgainForgetsTheAddressApprovedUnder: the addresses an
// identity approved under (replay_approval_addresses, round 12) are kept
// per request, so "request again" (what the pages and the worker tell
// people to do after an expiry, a policy change, a cancel) starts a request
// that knows nobody by an earlier name.
//
// approver1 approves a manual refund as a1@example.com; the requester
// cancels it and requests the same dead letter again; the provider renames
// approver1 to a1-new@example.com, and the person's second identity holds
// a1@example.com. Both identities approve the new request: the console
// recorded, on the first request and in its audit log, that approver1 is
// the person behind a1@example.com, yet counts them as two distinct
// approvers, and the refund is published on one person's word.
func TestRevGov13RequestAgainForgetsTheAddressApprovedUnder(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()

	const msgID = "refund-revgov13-again"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-13b"}`)
	first := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	require.Equal(t, 2, first.ApprovalsNeeded, "orders.refund is manual: two approvers")
	_, err := b.replays.Approve(ctx, first.ID, approver1, replay.ApproveInput{IntentHex: first.IntentHex(), Confirmation: "REPLAY " + msgID},
		quarantine.RequestMeta{})
	require.NoError(t, err)
	require.NoError(t, b.replays.Cancel(ctx, first.ID, oncall, "wrong reason given; requesting again", quarantine.RequestMeta{}))

	again := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout; payments confirmed it is not applied"})
	require.Equal(t, 2, again.ApprovalsNeeded)
	a1Now, second := renamedWithSecondIdentity(t, b)

	in := replay.ApproveInput{IntentHex: again.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err = b.replays.Approve(ctx, again.ID, second, in, quarantine.RequestMeta{})
	require.NoError(t, err, "nothing of the person stands on the new request yet")
	d, err := b.replays.Approve(ctx, again.ID, a1Now, in, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err),
		"approver1 approved request %d of this dead letter as %s, which %s|%s holds; both identities approve request %d: err=%v, %d of %d",
		first.ID, approver1.Email, second.Issuer, second.Subject, again.ID, err, d.ApprovalsHave, d.ApprovalsNeeded)
	got, err := b.replays.Request(ctx, again.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, got.Status, "the request waits for a second person")
	if got.Status != replay.StatusApproved {
		return
	}
	run(t, b.worker(t, replay.WorkerConfig{}))
	r := b.waitFinished(t, again.ID)
	assert.Zero(t, b.onSubject(t, "app.acme.orders.refund"),
		"a manual item was published on the two approvals of one person (request %s: %s; jobs: %s)", r.Status, r.StatusReason, b.jobsText(t, again.ID))
}
