package replay_test

// Review (rev-fixes): neighbouring paths of this session's fixes.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestApprovalExpiryOnTheDatabaseClock: 9996b33 judges retention on the
// database's clock because one replica's clock must not decide for all (a
// VM restored from a snapshot, NTP gone wrong). The approvals' expiry
// still goes by the clock of the console that serves each step
// (Config.Now: ApprovalLapsed at approve, JudgeRun in the worker). A date
// in the future is ignored (a fast clock), but a slow one is believed: a
// manual request (approvals expire after 4h) approved ten days ago is
// approved by a second approver today on a console whose clock is ten
// days behind (it reads an hour after the first approval), and the
// ten-day-old approval counts: the refund is ready to run. The database's
// now() says ten days.
func TestApprovalExpiryOnTheDatabaseClock(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	tenDaysAgo := time.Now().Add(-10 * 24 * time.Hour) // a correct console, ten days ago
	b.now.Store(&tenDaysAgo)
	id := b.seedItem(t, "orders.refund", "refund-skew", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY refund-skew"}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)

	slow := tenDaysAgo.Add(time.Hour) // today, on a console ten days slow
	b.now.Store(&slow)
	d, err := b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	var dbAge time.Duration
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT extract(epoch FROM now() - min(approved_at))::bigint * interval '1 second' FROM replay_approvals WHERE request_id = $1`, req.ID).Scan(&dbAge))
	t.Logf("ready=%v have=%d reason=%q; the first approval is %s old by the database's clock", d.Ready, d.ApprovalsHave, d.Reason, dbAge.Round(time.Hour))
	assert.False(t, d.Ready, "an approval ten days old by the database's clock (manual approvals last 4h) counts because a slow console judged it")
}
