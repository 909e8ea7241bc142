package replay_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestPoisonJobPanicOutsideAnyJobIsNarrowedDownToIt: a panic met outside
// any one job of a claim of several (while the claim is loaded, or after
// it was published, before its record), but only on claims that hold one
// job (here the fourth of seven), is narrowed down to that job: the
// worker lets the claim's jobs go and claims them again in halves, in
// rounds, not leases, until a claim of the poison job alone panics and
// the failure is counted against it. The other jobs are replayed, each
// published once, with no lease waited. The poison job then fails a
// lease apart, alone, and at the third failure ends as the poison rule
// says: blocked before anything of it was sent; needs reconciliation
// once its publish may have landed.
func TestPoisonJobPanicOutsideAnyJobIsNarrowedDownToIt(t *testing.T) {
	t.Parallel()
	const bug = "a bug met on the claim"
	for name, tc := range map[string]struct {
		inject    func(w *replay.Worker, poison int64)
		want      string
		published int
	}{
		"WhileTheClaimIsLoaded": {
			inject: func(w *replay.Worker, poison int64) {
				w.Loaded(func(ids []int64) {
					if slices.Contains(ids, poison) {
						panic(bug)
					}
				})
			},
			want: "blocked",
		},
		"AfterTheClaimWasPublished": {
			inject: func(w *replay.Worker, poison int64) {
				w.AfterPublish(func(ids []int64) bool {
					if slices.Contains(ids, poison) {
						panic(bug)
					}
					return true
				})
			},
			want:      "needs_reconciliation",
			published: 1,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			ctx := context.Background()
			const n = 7
			dls := make([]int64, n)
			for i := range dls {
				dls[i] = b.seedItem(t, "search.index_update", fmt.Sprintf("narrow-%s-%d", name, i), nil, "{}")
			}
			req := b.request(t, dls, replay.SubmitInput{})
			require.Equal(t, replay.StatusApproved, req.Status)
			var jobs []int64
			rows, err := b.db.Pool.Query(ctx, `SELECT id FROM replay_jobs WHERE request_id = $1 ORDER BY not_before, id`, req.ID)
			require.NoError(t, err)
			for rows.Next() {
				var id int64
				require.NoError(t, rows.Scan(&id))
				jobs = append(jobs, id)
			}
			require.NoError(t, rows.Err())
			require.Len(t, jobs, n)
			poison := jobs[3]
			var poisonDL int64
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT dead_letter_id FROM replay_jobs WHERE id = $1`, poison).Scan(&poisonDL))

			w := b.worker(t, replay.WorkerConfig{Owner: "narrowing", Lease: time.Hour})
			tc.inject(w, poison)
			// The whole claim, then two claims per halving (one that
			// passes, one that panics), down to the poison job alone.
			rounds := 0
			for b.failures(t, poisonDL) == 0 {
				rounds++
				require.LessOrEqual(t, rounds, 1+2*3, "narrowed down in about two claims per halving")
				if _, err := w.RunOnceGuarded(ctx); err != nil {
					require.ErrorContains(t, err, "replay worker panicked: "+bug)
				}
			}
			assert.Equal(t, "claimed", b.job(t, req.ID, poisonDL).State, "counted once, left to its lease")
			// The rest of the narrowing, then nothing left to claim but
			// the poison job, under its lease.
			for i := 0; ; i++ {
				require.Less(t, i, n, "the worker runs out of jobs")
				claimed, err := w.RunOnceGuarded(ctx)
				require.NoError(t, err)
				if claimed == 0 {
					break
				}
			}
			for i, dl := range dls {
				if dl == poisonDL {
					continue
				}
				assert.Equal(t, "replayed", b.job(t, req.ID, dl).State, "job %d", i)
				assert.Equal(t, 1, b.publishedAs(t, fmt.Sprintf("narrow-%s-%d", name, i)), "job %d published once", i)
				assert.Zero(t, b.failures(t, dl), "job %d is not blamed", i)
			}
			assert.Equal(t, 1, b.failures(t, poisonDL))

			// Alone, a lease apart, it fails twice more and ends.
			for k := 2; k <= replaypolicy.MaxWorkerFailures; k++ {
				b.leaseRunsOut(t, req.ID)
				_, err := w.RunOnceGuarded(ctx)
				require.ErrorContains(t, err, "replay worker panicked: "+bug)
				require.Equal(t, k, b.failures(t, poisonDL))
			}
			j := b.job(t, req.ID, poisonDL)
			assert.Equal(t, tc.want, j.State, j.Result)
			assert.Contains(t, j.Result, "the worker failed on this item 3 times: "+bug)
			assert.Equal(t, tc.published, b.publishedAs(t, fmt.Sprintf("narrow-%s-3", name)))
			var failedTx, endedTx string
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT xmin::text FROM audit_log WHERE action = $1 AND object_id = $2 ORDER BY seq DESC LIMIT 1`,
				audit.ActionReplayItemWorkerFailed, fmt.Sprint(poisonDL)).Scan(&failedTx))
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT xmin::text FROM audit_log WHERE action = $1 AND object_id = $2`,
				audit.ReplayItemPrefix+tc.want, fmt.Sprint(poisonDL)).Scan(&endedTx))
			assert.Equal(t, failedTx, endedTx, "the end is written with the third failure")
			b.waitStatus(t, req.ID, replay.StatusDoneWithProblems)
			b.requireChainVerifies(t)
		})
	}
}

// unreadable is an error whose Error panics (a nil message): a panic's
// value that panics again wherever it is read.
type unreadable struct{ msg *string }

func (e *unreadable) Error() string { return *e.msg }

// TestPoisonJobWhoseCountPanicsIsCountedBare: a panic whose own value
// panics when read (here an error whose Error does) makes the count of
// the failure panic too, on the item's data. The count is tried again
// without any of it (no panic text, message id, operation id or
// subject in its rows), so the failure is counted all the same, and the
// job ends blocked at the third, instead of being claimed and failed on
// at every lease for ever.
func TestPoisonJobWhoseCountPanicsIsCountedBare(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dl := b.seedItem(t, "search.index_update", "count-bug", nil, "{}")
	req := b.request(t, []int64{dl}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	for n := 1; n <= replaypolicy.MaxWorkerFailures; n++ {
		w := b.worker(t, replay.WorkerConfig{Owner: fmt.Sprintf("bare-%d", n), Lease: time.Hour})
		w.BeforeSend(func(int64, time.Time) { panic(&unreadable{}) })
		_, err := w.RunOnceGuarded(ctx)
		require.ErrorContains(t, err, "replay worker panicked")
		require.Equal(t, n, b.failures(t, dl), "failure %d counted, bare", n)
		if n < replaypolicy.MaxWorkerFailures {
			b.leaseRunsOut(t, req.ID)
		}
	}
	j := b.job(t, req.ID, dl)
	assert.Equal(t, "blocked", j.State)
	assert.Contains(t, j.Result, "the worker failed on this item 3 times: (not recorded: counting this failure with the item's data panicked too")
	var panics, msgIDs []string
	rows, err := b.db.Pool.Query(ctx, `SELECT after->>'panic', message_id FROM audit_log WHERE action = $1 AND object_id = $2 ORDER BY seq`,
		audit.ActionReplayItemWorkerFailed, fmt.Sprint(dl))
	require.NoError(t, err)
	for rows.Next() {
		var p, m string
		require.NoError(t, rows.Scan(&p, &m))
		panics, msgIDs = append(panics, p), append(msgIDs, m)
	}
	require.NoError(t, rows.Err())
	require.Len(t, panics, replaypolicy.MaxWorkerFailures)
	for i := range panics {
		assert.Contains(t, panics[i], "not recorded")
		assert.Empty(t, msgIDs[i], "nothing of the item's data")
	}
	assert.Zero(t, b.publishedAs(t, "count-bug"))
	b.waitStatus(t, req.ID, replay.StatusDoneWithProblems)
	b.requireChainVerifies(t)
}

// panicOnFinish is a bug met while a request is finished: the statement
// that finds the finished requests (finishRequests) panics.
type panicOnFinish struct{}

func (panicOnFinish) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "FROM unnest($1::bigint[]) AS r(id)") {
		panic("a bug met while finishing the request")
	}
	return ctx
}

func (panicOnFinish) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestPoisonJobCountedOnceWhenFinishingItsRequestPanics: a panic met
// after the third failure was counted and the job ended (committed),
// while its request is finished, is not taken for a count that failed:
// the failure is not counted again bare (three rows, not four), the job
// stays ended, and the sweeper finishes the request (FinishIdle).
func TestPoisonJobCountedOnceWhenFinishingItsRequestPanics(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dl := b.seedItem(t, "search.index_update", "finish-bug", nil, "{}")
	req := b.request(t, []int64{dl}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	cfg, err := pgxpool.ParseConfig(b.db.Pool.Config().ConnString())
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = panicOnFinish{}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	svc := replay.New(pool, b.config(t))
	for n := 1; n <= replaypolicy.MaxWorkerFailures; n++ {
		w := replay.NewWorker(svc, b.js, b.auth, nil, replay.WorkerConfig{Owner: fmt.Sprintf("finish-%d", n), AckTimeout: time.Minute, Lease: time.Hour}, b.log)
		w.BeforeSend(func(int64, time.Time) { panic("a bug met on this item's data") })
		_, err := w.RunOnceGuarded(ctx)
		require.ErrorContains(t, err, "replay worker panicked")
		if n < replaypolicy.MaxWorkerFailures {
			b.leaseRunsOut(t, req.ID)
		}
	}
	assert.Equal(t, replaypolicy.MaxWorkerFailures, b.failures(t, dl), "counted once each, not again bare")
	j := b.job(t, req.ID, dl)
	assert.Equal(t, "blocked", j.State)
	assert.Contains(t, j.Result, "the worker failed on this item 3 times: a bug met on this item's data")
	r, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusApproved, r.Status, "not finished: that panicked")
	n, err := b.replays.FinishIdle(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	b.waitStatus(t, req.ID, replay.StatusDoneWithProblems)
}
