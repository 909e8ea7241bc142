package replay_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestSlowRecordRecordedInParts makes recording slower than a lease allows,
// as a database on a loaded machine is: a trigger takes 200 ms for every
// ledger row, so recording the 80 jobs of one claim takes 16 s, and the
// lease is 10 s (long enough that a loaded machine still publishes the
// claim in the two thirds of it a claim publishes in: with 4 s, at load
// 16, it released jobs unpublished, which the second worker took over). The claim's first attempt to record outlasts the lease and
// fails (before this was handled, every claim's record failed the same way
// and the jobs were claimed and published again, forever). The worker
// records the claim in smaller parts, renewing the lease of what is not yet
// recorded under its fencing tokens, and the request finishes: every job
// claimed once (a second worker runs from the publish on and never takes
// one over), every message in the target stream once, the audit rows of
// the items written by several transactions, all by the worker that
// published.
func TestSlowRecordRecordedInParts(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const n = 80
	ids, _ := b.seedN(t, n, "search.index_update", "slow")
	batch, drafts := b.draft(t, oncall, ids...)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex", Rates: map[int64]float64{drafts[0].ID: 5000}},
		quarantine.RequestMeta{})
	require.NoError(t, err)
	id := reqs[0].ID
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, id) // every job due: one claim
	require.NoError(t, err)
	// The fault injected: a slow database (the trigger's pg_sleep is the
	// slowness, not a wait of the test's).
	_, err = b.db.OwnerPool.Exec(ctx, `CREATE FUNCTION slow_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_sleep(0.2); RETURN NEW; END $$`)
	require.NoError(t, err)
	_, err = b.db.OwnerPool.Exec(ctx, `CREATE TRIGGER slow_ledger BEFORE INSERT ON replay_ledger FOR EACH ROW EXECUTE FUNCTION slow_ledger()`)
	require.NoError(t, err)

	w := b.worker(t, replay.WorkerConfig{Owner: "publisher", Lease: 10 * time.Second})
	var failed atomic.Int32
	w.RecordFailed(func(int, error) { failed.Add(1) })
	w.AfterPublish(func([]int64) bool {
		run(t, b.worker(t, replay.WorkerConfig{Owner: "other", Lease: 10 * time.Second})) // would take over a lease let go
		return true
	})
	claimed, err := w.RunOnce(ctx)
	require.NoError(t, err, "the claim is recorded by the worker that published it")
	require.Equal(t, n, claimed, "one claim of every job")
	assert.Positive(t, failed.Load(), "recording the whole claim at once outlasted the lease")

	b.waitStatus(t, id, replay.StatusDone)
	assert.Equal(t, map[string]int{"replayed": n}, b.jobStates(t, id))
	var reclaimed, parts, byOther int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE attempts <> 1) FROM replay_jobs WHERE request_id = $1`, id).
		Scan(&reclaimed))
	assert.Zero(t, reclaimed, "no job was claimed again")
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(DISTINCT at), count(*) FILTER (WHERE actor_subject <> 'replay-worker:publisher')
        FROM audit_log WHERE action = 'replay.item.replayed' AND after->>'request' = $1::bigint::text`, id).Scan(&parts, &byOther))
	assert.Greater(t, parts, 1, "recorded in parts, each in a transaction of its own")
	assert.Zero(t, byOther)
	assert.Len(t, streamMsgs(t, b.target), n, "each message once")
}
