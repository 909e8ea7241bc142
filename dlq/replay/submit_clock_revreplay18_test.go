package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevReplay18FastConsoleSubmitIgnoresEveryApproval (review revreplay18):
// the mirror of TestRevGov17FastConsoleApprovalOutlivesItsExpiry. Since
// revgov17 an approval is dated by the console's clock but never after the
// database's (insertApproval: least(Config.Now, now())), yet the request's
// submitted_at is still dated by the submitting console's clock alone
// (Submit: req.SubmittedAt = s.cfg.Now()), and the rules ignore every
// approval dated before the request (approvalVoid: IgnoredBeforeRequest,
// RequestedAt = submitted_at). A refund submitted on a replica whose clock
// runs three hours ahead can then not be approved by anyone for three
// hours: every approval, on any console (a fast one included: its stamp is
// clamped to the database's clock), is recorded, audited and counts for
// nothing, past the manual class's 4 h expiry window in practice.
func TestRevReplay18FastConsoleSubmitIgnoresEveryApproval(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID = "refund-revreplay18-fast-submit"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-18"}`)

	fast := time.Now().Add(3 * time.Hour) // the requester is served by a replica whose clock runs three hours ahead
	b.now.Store(&fast)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	require.Equal(t, 2, req.ApprovalsNeeded, "orders.refund is manual: two approvers")
	b.now.Store(nil) // the approvers' consoles have clocks that are right

	var ahead bool
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT submitted_at > now() FROM replay_requests WHERE id = $1`, req.ID).Scan(&ahead))
	assert.False(t, ahead, "the request is dated after the database's clock at the moment it was submitted")

	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	d, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.Equal(t, 1, d.ApprovalsHave, "the first approval, given after the request was submitted, does not count: %s", d.Reason)
	d, err = b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.True(t, d.Ready, "two approvers, neither the requester, approved after the submit; the request is not approved: %d of %d (%s)",
		d.ApprovalsHave, d.ApprovalsNeeded, d.Reason)
}
