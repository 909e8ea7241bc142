package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestPoisonJobGoesToAPersonAfterThreeFailures: a job whose data makes
// the worker panic is recovered (runOnceGuarded) and left to its lease,
// as a crash leaves it; each such failure is counted against the job, in
// the audit log, whichever worker met it. At the third it is no longer
// claimed: it ends for a person, the count and the panic's text its
// reason on the request page, in the same transaction as the failure's
// audit row, and the request finishes its other item. A worker that died
// holding the job (kill -9: here a claim that is never executed) counts
// for nothing. A panic before anything of the job was sent blocks it; one
// after its publish may have landed (the broker's answer was being
// judged) keeps that possibility: needs reconciliation, never "not sent".
func TestPoisonJobGoesToAPersonAfterThreeFailures(t *testing.T) {
	t.Parallel()
	const bug = "a bug met on this item's data"
	for name, tc := range map[string]struct {
		inject    func(w *replay.Worker, poison int64)
		want      string // the poison job's end
		published int    // how often the target stream holds the poison item
	}{
		"BeforeItWasSent": {
			inject: func(w *replay.Worker, poison int64) {
				w.BeforeSend(func(id int64, _ time.Time) {
					if id == poison {
						panic(bug)
					}
				})
			},
			want: "blocked",
		},
		"AfterItsPublishMayHaveLanded": {
			inject: func(w *replay.Worker, poison int64) {
				w.OnAck(func(id int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
					if id == poison {
						panic(fmt.Errorf("%s (PubAck %v)", bug, a != nil))
					}
					return a, err
				})
			},
			want:      "needs_reconciliation",
			published: 1, // stored at the first attempt; each retry under the same id is a duplicate
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			ctx := context.Background()
			poisonDL := b.seedItem(t, "search.index_update", "poison-"+name, nil, "{}")
			goodDL := b.seedItem(t, "search.index_update", "good-"+name, nil, "{}")
			req := b.request(t, []int64{poisonDL, goodDL}, replay.SubmitInput{})
			require.Equal(t, replay.StatusApproved, req.Status)
			var poison int64
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT id FROM replay_jobs WHERE request_id = $1 AND dead_letter_id = $2`,
				req.ID, poisonDL).Scan(&poison))

			// A worker claims the jobs and dies (kill -9): no failure is counted.
			dying := b.worker(t, replay.WorkerConfig{Lease: time.Hour})
			claimed, err := dying.Claim(ctx)
			require.NoError(t, err)
			require.Len(t, claimed, 2)
			b.leaseRunsOut(t, req.ID)
			require.Zero(t, b.failures(t, poisonDL), "a crash is not the job's fault")

			// Three workers (a restart, another replica) fail on it in turn.
			for n := 1; n <= replaypolicy.MaxWorkerFailures; n++ {
				w := b.worker(t, replay.WorkerConfig{Owner: fmt.Sprintf("worker-%d", n), Lease: time.Hour})
				tc.inject(w, poison)
				_, err := w.RunOnceGuarded(ctx)
				require.ErrorContains(t, err, "replay worker panicked: "+bug, "failure %d", n)
				require.Equal(t, n, b.failures(t, poisonDL), "each failure is counted once, whichever worker met it")
				if n < replaypolicy.MaxWorkerFailures {
					j := b.job(t, req.ID, poisonDL)
					require.Equal(t, "claimed", j.State, "failure %d: left to its lease, as a crash leaves it", n)
					b.leaseRunsOut(t, req.ID)
				}
			}

			j := b.job(t, req.ID, poisonDL)
			assert.Equal(t, tc.want, j.State, j.Result)
			assert.Contains(t, j.Result, "the worker failed on this item 3 times: "+bug)
			assert.Equal(t, tc.published, b.publishedAs(t, "poison-"+name))
			items, err := b.replays.Items(ctx, req.ID, 10)
			require.NoError(t, err)
			for _, it := range items {
				if it.DeadLetterID == poisonDL {
					assert.Equal(t, replay.JobState(tc.want), it.Outcome)
					assert.Contains(t, it.OutcomeReason, "the worker failed on this item 3 times: "+bug, "the request page says why")
				}
			}
			// The job's end is audited with the failure that ended it, in
			// its transaction (the rows' xmin).
			var failedTx, endedTx, endReason string
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT xmin::text FROM audit_log WHERE action = $1 AND object_id = $2 ORDER BY seq DESC LIMIT 1`,
				audit.ActionReplayItemWorkerFailed, fmt.Sprint(poisonDL)).Scan(&failedTx))
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT xmin::text, reason FROM audit_log WHERE action = $1 AND object_id = $2`,
				audit.ReplayItemPrefix+tc.want, fmt.Sprint(poisonDL)).Scan(&endedTx, &endReason))
			assert.Equal(t, failedTx, endedTx, "the end is written with the third failure")
			assert.Contains(t, endReason, "the worker failed on this item 3 times: "+bug)

			// The job is no longer claimed; the request finishes its other item.
			b.leaseRunsOut(t, req.ID)
			run(t, b.worker(t, replay.WorkerConfig{}))
			r := b.waitStatus(t, req.ID, replay.StatusDoneWithProblems)
			assert.Equal(t, "replayed", b.job(t, req.ID, goodDL).State)
			assert.Equal(t, 1, b.publishedAs(t, "good-"+name))
			assert.Equal(t, replaypolicy.MaxWorkerFailures, b.failures(t, poisonDL), "not claimed again")
			assert.Equal(t, tc.want, b.job(t, req.ID, poisonDL).State, r.StatusReason)
		})
	}
}

// failures counts the worker's failures on the dead letter's jobs.
func (b *replayBundle) failures(t *testing.T, deadLetterID int64) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = $1 AND object_id = $2`,
		audit.ActionReplayItemWorkerFailed, fmt.Sprint(deadLetterID)).Scan(&n))
	return n
}

// TestPoisonJobPanicOutsideAnyJobCountsForNone: a panic the worker meets
// outside any one job (here, after the rules judged a claim of two) is
// blamed on neither: nothing is counted, both jobs are let go at once
// (still claimed, their lease ended, as a crash's ends) and then
// published. (A worker that meets it again on smaller claims narrows it
// down to one job: TestPoisonJobPanicOutsideAnyJobIsNarrowedDownToIt.)
func TestPoisonJobPanicOutsideAnyJobCountsForNone(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	first := b.seedItem(t, "search.index_update", "outside-1", nil, "{}")
	second := b.seedItem(t, "search.index_update", "outside-2", nil, "{}")
	req := b.request(t, []int64{first, second}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	w := b.worker(t, replay.WorkerConfig{Lease: time.Hour})
	w.AfterJudge(func() { panic("a bug met on the claim") })
	_, err := w.RunOnceGuarded(ctx)
	require.ErrorContains(t, err, "replay worker panicked: a bug met on the claim")
	assert.Zero(t, b.failures(t, first))
	assert.Zero(t, b.failures(t, second))
	assert.Equal(t, map[string]int{"claimed": 2}, b.jobStates(t, req.ID), "taken over, fenced, as a crash's are")
	var held int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_jobs WHERE request_id = $1 AND lease_until > now()`, req.ID).Scan(&held))
	assert.Zero(t, held, "let go at once, not held for their lease")

	b.leaseRunsOut(t, req.ID)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Equal(t, 1, b.publishedAs(t, "outside-1"))
	assert.Equal(t, 1, b.publishedAs(t, "outside-2"))
}
