package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRev38OverdueBacklogIsSpreadFromNow: request R1 (12 jobs at 1/s) was
// due an hour ago, with no worker running meanwhile; R2's one job fell
// due since. A claim takes what R1's rate lets it publish, and spreads
// the rest of R1's due jobs from now at its rate, so R2's job (and any
// retry after a lost PubAck) is next in the order every claim reads.
// Before, R1's backlog stayed an hour in the past, filled every claim's
// window, and R2 waited for all of it (a retry, past its duplicate
// window, went to a person).
func TestRev38OverdueBacklogIsSpreadFromNow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	ids1, _ := b.seedN(t, 12, "search.index_update", "rev38-backlog")
	batch, drafts := b.draft(t, oncall, ids1...)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "slowly", Rates: map[int64]float64{drafts[0].ID: 1}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	r1 := reqs[0].ID
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = not_before - interval '1 hour' WHERE request_id = $1`, r1)
	require.NoError(t, err)
	ids2, _ := b.seedN(t, 1, "search.index_update", "rev38-later")
	r2 := b.request(t, ids2, replay.SubmitInput{Reason: "another fix"}).ID

	w := b.worker(t, replay.WorkerConfig{Owner: "w", Batch: 4, Lease: 3 * time.Second})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	var r2Due, r1Next time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT not_before FROM replay_jobs WHERE request_id = $1`, r2).Scan(&r2Due))
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT min(not_before) FROM replay_jobs WHERE request_id = $1 AND state = 'pending'`, r1).Scan(&r1Next))
	require.True(t, r2Due.Before(r1Next), "R2's job (due %s) comes before R1's backlog (next %s)", r2Due, r1Next)

	run(t, w)
	b.waitStatus(t, r2, replay.StatusDone)
}
