package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevExec26GateRefusesAJobWhoseLeaseRanOutWhileItJudged: a worker
// whose lease ran out while it judged its claim (a slow service, a pause)
// publishes nothing, even when no other worker took the job over yet:
// from the lease's end another worker may claim the job at any moment, and
// two workers would publish it. The job goes back to wait, never marked
// attempted, and its request stays approved (nothing of it may have
// landed).
func TestRevExec26GateRefusesAJobWhoseLeaseRanOutWhileItJudged(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "rev26c-lease-out", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status, "rebuildable needs no approver")

	w := b.worker(t, replay.WorkerConfig{Lease: time.Minute})
	w.AfterJudge(func() { b.leaseRunsOut(t, req.ID) }) // judged; the lease ends before the publish gate
	n, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the job was claimed")

	assert.Zero(t, b.onSubject(t, "app.acme.search.index_update"), "nothing was published by a worker whose lease had run out")
	j := b.job(t, req.ID, id)
	assert.Equal(t, "pending", j.State, "released to the next claim: %s", j.Result)
	var attempted, handed *time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT first_attempt_at, handed_at FROM replay_jobs WHERE request_id = $1`, req.ID).
		Scan(&attempted, &handed))
	assert.Nil(t, attempted, "never marked attempted")
	assert.Nil(t, handed, "never marked handed to NATS")
	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusApproved, got.Status, "nothing of it may have landed: it is not running")
}

// TestRevExec26FencedOutWorkerPublishesNothing: a worker whose lease ran
// out and whose job another worker claimed since (a new fencing token,
// under a lease that runs) publishes nothing when it gets to the publish:
// the job is the other worker's, and two publishes of it would both be
// the console's. The other worker replays it, once.
func TestRevExec26FencedOutWorkerPublishesNothing(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "rev26c-fenced-out", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	slow := b.worker(t, replay.WorkerConfig{Owner: "slow"})
	jobs, err := slow.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	slow.Judge(ctx, jobs)
	b.leaseRunsOut(t, req.ID) // a pause: the slow worker's lease ends, and the fast one claims the job
	fast := b.worker(t, replay.WorkerConfig{Owner: "fast"})
	again, err := fast.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, again, 1)
	require.Greater(t, again[0].Fence(), jobs[0].Fence())

	slow.Publish(ctx, jobs, time.Now().Add(time.Minute))
	assert.Zero(t, b.onSubject(t, "app.acme.search.index_update"), "the fenced-out worker published nothing")
	require.NoError(t, slow.Record(ctx, jobs))
	var owner string
	var attempted *time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT lease_owner, first_attempt_at FROM replay_jobs WHERE request_id = $1`, req.ID).
		Scan(&owner, &attempted))
	assert.Equal(t, "fast", owner, "the job is still the fast worker's")
	assert.Nil(t, attempted, "the fenced-out worker marked nothing attempted")

	fast.Judge(ctx, again)
	fast.Publish(ctx, again, time.Now().Add(time.Minute))
	require.NoError(t, fast.Record(ctx, again))
	assert.Equal(t, map[string]int{"replayed": 1}, b.jobStates(t, req.ID))
	assert.Equal(t, 1, b.onSubject(t, "app.acme.search.index_update"), "one publish, by the worker that holds the job")
}
