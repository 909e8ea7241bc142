package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestAwaitingCountsALapsedApprovalsRequest: a manual request needs two
// approvers; the first approves, and the navigation's count for them
// leaves the request out (it waits for someone else). Their approval then
// lapses (older than the class's approval expiry: it no longer counts and
// Approve takes it again, replaypolicy.ApprovalLapsed): the request waits
// for them again, and the count says so, as their approvals page does.
func TestAwaitingCountsALapsedApprovalsRequest(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "orders.refund", "awaiting-lapsed-1", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	require.Equal(t, 2, req.ApprovalsNeeded)
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY awaiting-lapsed-1"}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	all := func(string, replaypolicy.Class) bool { return true }
	awaiting := func() int {
		n, err := b.replays.Awaiting(ctx, mayScopes([]string{"acme"}, all), approver1, 10)
		require.NoError(t, err)
		return n
	}
	require.Equal(t, 0, awaiting(), "approved: it waits for someone else")

	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_approvals SET approved_at = approved_at - interval '30 days' WHERE request_id = $1`, req.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, awaiting(), "a lapsed approval is theirs to give again: the request waits for them")

	d, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err, "they approve again")
	assert.Equal(t, 1, d.ApprovalsHave)
	assert.Equal(t, 0, awaiting(), "approved again")
}
