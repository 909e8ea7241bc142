package replay_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestStatusReadPastPublishingSendsNothing: the last read of a request's
// status before a send (the job's turn took longer than recheckAfter)
// waits on a lock on replay_requests until the part of the lease the
// claim publishes in has passed. At the slowest rate (MinRate, one
// message in 100 s) a send up to half an interval late (50 s) is on time
// for the rate, longer than the whole lease, so only the lease checked
// again after that read keeps the job from being sent when another worker
// may hold it: it is released, and nothing reaches the subject.
func TestStatusReadPastPublishingSendsNothing(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "slow-status", nil, `{"n":1}`)
	batch, drafts := b.draft(t, oncall, id)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "slowly", Rates: map[int64]float64{drafts[0].ID: replaypolicy.MinRate}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	req := reqs[0]
	sub, err := b.nc.SubscribeSync("app.>")
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())

	w := b.worker(t, replay.WorkerConfig{Lease: 1500 * time.Millisecond}) // publishes for 1 s
	var reached atomic.Bool
	released := make(chan error, 1)
	w.BeforeSend(func(_ int64, publishBy time.Time) {
		if reached.Swap(true) {
			return
		}
		// On the worker's goroutine: assert, not require.
		entered := time.Now()
		tx, err := b.db.Pool.Begin(ctx)
		if !assert.NoError(t, err) {
			return
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE replay_requests IN ACCESS EXCLUSIVE MODE`); !assert.NoError(t, err) {
			assert.NoError(t, tx.Rollback(ctx))
			return
		}
		go func() {
			defer func() { _ = tx.Rollback(ctx) }()
			released <- wait.Poll(time.Minute, wait.Interval, func() error {
				var waiting bool
				// A lock on replay_requests waited for (not the text of the
				// waiting statement: pg_stat_activity keeps its first 1,024
				// bytes, and the status read names the table past them).
				if err := b.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l
                    WHERE l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                      AND l.relation = 'replay_requests'::regclass AND NOT l.granted)`).Scan(&waiting); err != nil {
					return wait.Stop(err)
				}
				if !waiting || time.Now().Before(publishBy) {
					return fmt.Errorf("%w: the status read waits on the lock: %t; the claim's publishing ends in %s", wait.ErrNotYet, waiting, time.Until(publishBy))
				}
				return nil
			})
		}()
		// The turn outlasts recheckAfter (5 ms), so the status is read
		// again before the send, and waits on the lock.
		wait.Until(t, "the turn to outlast recheckAfter", time.Minute, func() bool { return time.Since(entered) > 10*time.Millisecond })
	})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.True(t, reached.Load(), "the worker reached the send")
	require.NoError(t, <-released, "the status read waited on the lock past the claim's publishing")

	require.NoError(t, b.nc.Flush())
	n, _, err := sub.Pending()
	require.NoError(t, err)
	assert.Zero(t, n, "publishes after the claim's publishing time")
	j := b.job(t, req.ID, id)
	assert.Equal(t, "pending", j.State, j.Result)
	assert.Contains(t, j.Result, "released: the lease was running out")
}
