package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/logs"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevExec28TakenOverLeaseIsNotRenewed: a worker that kept a PubAck it
// could not record in its lease renews the lease of its jobs before it
// records them (recordKept), under their fencing tokens. When another
// worker took the job over meanwhile (a claim moved its fence), the
// renewal leaves that worker's lease as its claim set it: the first worker
// does not stretch a lease that is not its own (were the other worker to
// die, the job would wait out a lease nobody holds), records nothing, and
// publishes nothing more; the other worker replays the item, stored once.
func TestRevExec28TakenOverLeaseIsNotRenewed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "rev28a-renew-taken-over"
	id := b.seedItem(t, "search.index_update", msgID, nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	var logged logs.Buffer
	w := b.loggedWorker(t, replay.WorkerConfig{Owner: "first", Lease: time.Second, RecordTimeout: time.Second}, &logged)
	var lock pgx.Tx
	w.AfterPublish(func([]int64) bool {
		lock = b.lockJob(t, req.ID) // the database answers nothing about the job until the lease ends
		return true
	})
	_, err := w.RunOnce(ctx)
	require.Error(t, err, "the lease ended before the record")
	w.AfterPublish(nil)
	require.NoError(t, lock.Rollback(ctx))
	require.NotNil(t, b.published(t)[msgID], "the broker stored the first worker's publish")

	b.leaseRunsOut(t, req.ID)
	other := b.worker(t, replay.WorkerConfig{Owner: "other", Lease: time.Hour})
	var jobs []*replay.Job
	wait.Until(t, "the other worker took the job over", time.Minute, func() bool {
		// a statement of the first worker's record the lock held may still hold the row for a moment (claims skip locked rows)
		jobs, err = other.Claim(ctx)
		require.NoError(t, err)
		return len(jobs) == 1
	})
	var leaseUntil time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT lease_until FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&leaseUntil))

	n, err := w.RunOnce(ctx) // records what it kept first: renews, then records, under its old fence
	require.NoError(t, err)
	assert.Zero(t, n, "nothing to claim: the job is the other worker's")
	var owner, state string
	var after time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT lease_owner, state, lease_until FROM replay_jobs WHERE request_id = $1`, req.ID).
		Scan(&owner, &state, &after))
	assert.Equal(t, "other", owner)
	assert.Equal(t, "claimed", state, "the first worker recorded nothing")
	assert.True(t, after.Equal(leaseUntil), "the other worker's lease is as its claim set it (was %s, now %s)", leaseUntil, after)
	assert.NotEmpty(t, logLine(&logged, "replay outcome not recorded: the job is no longer this worker's"), "the log: %s", logged.String())

	other.Judge(ctx, jobs)
	other.Publish(ctx, jobs, time.Now().Add(time.Minute))
	require.NoError(t, other.Record(ctx, jobs))
	assert.Equal(t, map[string]int{"replayed": 1}, b.jobStates(t, req.ID))
	assert.Equal(t, 1, b.publishedAs(t, msgID), "stored once")
}
