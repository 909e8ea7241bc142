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

// TestRevGov17FastConsoleApprovalOutlivesItsExpiry (review revgov17): the
// sibling of TestApprovalExpiryOnTheDatabaseClock, a console whose clock
// runs ahead. Approvals are stamped with the clock of the console that
// takes them (Config.Now), and judgedAt's comment says a console's skew
// can only make approvals count for less. A console three hours fast
// stamps both approvals of a manual refund (approvals expire after 4h)
// three hours in the future by the database's clock, and the worker, on a
// console whose clock is right, judges the approval's expiry from that
// stamp (StartBy: first approval + 4h): five hours after the approvals
// were given, by the database's clock, it still publishes the refund.
//
// Five hours are passed the way the neighbouring tests pass them
// (startby_fixgov11_test.go): every time the database holds of the
// request, its approvals and its job is moved five hours back, as if it
// had all happened then.
func TestRevGov17FastConsoleApprovalOutlivesItsExpiry(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID = "refund-revgov17-fast-console"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-17"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"}) // submitted on a console whose clock is right
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	require.Equal(t, 2, req.ApprovalsNeeded, "orders.refund is manual: two approvers")

	fast := time.Now().Add(3 * time.Hour) // the approvers are served by a replica whose clock runs three hours ahead
	b.now.Store(&fast)
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	d, err := b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready, "two approvers, neither the requester: %s", d.Reason)
	b.now.Store(nil) // from here on, consoles whose clocks are right

	var ahead int
	var requestAhead bool
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE a.approved_at > now()), bool_or(r.approved_at > now())
        FROM replay_approvals a JOIN replay_requests r ON r.id = a.request_id WHERE a.request_id = $1`, req.ID).Scan(&ahead, &requestAhead))
	assert.Zero(t, ahead, "approvals are dated after the database's clock at the moment they were given")
	assert.False(t, requestAhead, "the request's approval is dated after the database's clock")

	// Five hours later by the database's clock.
	for _, q := range []string{
		`UPDATE replay_requests SET created_at = created_at - interval '5 hours', submitted_at = submitted_at - interval '5 hours',
            approved_at = approved_at - interval '5 hours' WHERE id = $1`,
		`UPDATE replay_approvals SET approved_at = approved_at - interval '5 hours' WHERE request_id = $1`,
		`UPDATE replay_jobs SET not_before = not_before - interval '5 hours' WHERE request_id = $1`,
	} {
		_, err := b.db.OwnerPool.Exec(ctx, q, req.ID)
		require.NoError(t, err)
	}

	n, err := b.worker(t, replay.WorkerConfig{}).RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the job is due")
	j := b.job(t, req.ID, id)
	assert.Zero(t, b.publishedAs(t, msgID),
		"a manual refund approved five hours ago (approvals expire after 4h) was published because the console that took the approvals ran ahead: job %s (%s)",
		j.State, j.Result)
	assert.Equal(t, "blocked", j.State, j.Result)
	assert.Contains(t, j.Result, "approval expired")
}
