package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRecordTakesRequestFirst: a console action (cancel, stop, reject,
// reconcile) locks a request's row before its jobs and dead letters; the
// first record of the request that may have published (while it is
// approved: it marks it running) takes the row in the same order, so it
// waits for the action before it has locked any job, and records once
// the action is over. (A record that published nothing takes no lock on
// the row at all, as later records.)
func TestRecordTakesRequestFirst(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	ids, _ := b.seedN(t, 3, "search.index_update", "order")
	req := b.request(t, ids, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	// Marked attempted, as a publish gate marks a job before it sends it:
	// a publish of each may have landed, so the record starts the request.
	_, err := b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now(), first_attempt_at = now() WHERE request_id = $1`, req.ID)
	require.NoError(t, err)
	w := b.worker(t, replay.WorkerConfig{Owner: "order", RecordTimeout: 30 * time.Second})
	jobs, err := w.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 3)
	for _, j := range jobs {
		j.SetOutcome(replay.JobBlocked, "blocked by the test")
	}

	// The action holds the request's row, as Cancel does first.
	action, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = action.Rollback(ctx) }()
	_, err = action.Exec(ctx, `SELECT id FROM replay_requests WHERE id = $1 FOR UPDATE`, req.ID)
	require.NoError(t, err)

	recorded := make(chan error, 1)
	go func() { recorded <- w.Record(ctx, jobs) }()
	wait.Until(t, "the record to wait for the request's row", time.Minute, func() bool {
		var n int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'
              AND query LIKE 'UPDATE replay_requests SET status = ''running''%'`).Scan(&n))
		return n == 1
	})
	_, err = action.Exec(ctx, `SELECT id FROM replay_jobs WHERE request_id = $1 FOR UPDATE NOWAIT`, req.ID)
	require.NoError(t, err, "the record locked a job before the request")
	require.NoError(t, action.Commit(ctx))

	require.NoError(t, <-recorded)
	assert.Equal(t, map[string]int{"blocked": 3}, b.jobStates(t, req.ID))
	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.NotEqual(t, replay.StatusApproved, got.Status, "the record marked it running (and the finish ended it)")
}
