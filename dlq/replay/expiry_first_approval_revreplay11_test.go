package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevReplay11FirstApprovalPastItsExpiryStillPublishes: the policy file
// says approval_expiry is "how long after it was given an approval counts"
// (dev/policy.toml), and the approval step counts only approvals younger
// than that. At execution, though, JudgeRun's expiry (ApprovalLapse) runs
// from the request's approved_at, the moment the LAST approval completed
// it, not from the approvals themselves. A manual request (4 h expiry)
// approved by approver 1, then by approver 2 3 h 50 min later, is
// published 7 h 40 min after approver 1 signed off: an approval twice as
// old as the policy lets any approval count is one of the two that let a
// destructive item go. The approvals page itself says the request expires
// "when the first approval lapses"; the worker does not hold to it.
func TestRevReplay11FirstApprovalPastItsExpiryStillPublishes(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "orders.refund", MsgID: "refund-old-first",
		CorrelationID: "corr-refund-old-first", Payload: []byte(`{"refund":1}`), At: time.Now().Add(-9 * time.Hour)})
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY refund-old-first"}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	d, err := b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready, "precondition: %s", d.Reason)

	// Time as it went: the request was submitted 8 h ago, approver 1
	// signed off 7 h 40 min ago, approver 2 3 h 50 min later (inside
	// approver 1's 4 h: both counted), which approved the request; the
	// workers come back now (the jobs are due now). The rows are dated
	// back, as the clock would have left them; nothing else changes.
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_requests SET created_at = created_at - interval '8 hours',
            submitted_at = submitted_at - interval '8 hours', approved_at = approved_at - interval '3 hours 50 minutes' WHERE id = $1`, req.ID)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_approvals SET approved_at = approved_at - CASE approver_subject
            WHEN 'approver1' THEN interval '7 hours 40 minutes' ELSE interval '3 hours 50 minutes' END WHERE request_id = $1`, req.ID)
	require.NoError(t, err)
	d, err = b.replays.Decision(ctx, req.ID, approver1)
	require.NoError(t, err)
	t.Logf("the approvals as the approval step counts them now: ready=%v have=%d: %s", d.Ready, d.ApprovalsHave, d.Reason)
	require.Equal(t, 1, d.ApprovalsHave, "precondition: approver 1's approval no longer counts by the rules' own clock")

	run(t, b.worker(t, replay.WorkerConfig{}))
	r := b.waitFinished(t, req.ID)
	assert.Zero(t, b.onSubject(t, "app.acme.orders.refund"),
		"a manual item was published on an approval given 7h40m before, past the 4h approval_expiry it counts for (request %s: %s; jobs: %s)",
		r.Status, r.StatusReason, b.jobsText(t, req.ID))
}
