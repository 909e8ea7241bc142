package replay_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestSubmitAndDiscardOfOverlappingDeadLettersNeverDeadlock runs, round
// after round, two submits of batches of two requests each (two item
// types), two discards that each take dead letters of both batches, in
// descending id order, and a discard of dead letters of both types in no
// batch (the same counter rows), all at once. Every submit and discard either
// succeeds or is refused (a conflict, or a draft that changed); none dies
// as a deadlock victim. Afterwards each dead letter is either discarded or
// held by one open request, never both nor neither, and the depth counters
// equal the table's counts.
func TestSubmitAndDiscardOfOverlappingDeadLettersNeverDeadlock(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const rounds = 25
	var submitted, discarded, refused int
	var all []int64
	for r := range rounds {
		idx, _ := b.seedN(t, 4, "search.index_update", fmt.Sprintf("dl-idx-%d", r))
		ana, _ := b.seedN(t, 4, "analytics.event", fmt.Sprintf("dl-ana-%d", r))
		all = append(append(all, idx...), ana...)
		batchA, _ := b.draft(t, oncall, idx[0], idx[1], ana[0], ana[1])
		batchB, _ := b.draft(t, oncall, idx[2], idx[3], ana[2], ana[3])
		spare, _ := b.seedN(t, 1, "search.index_update", fmt.Sprintf("dl-spare-idx-%d", r))
		spareAna, _ := b.seedN(t, 1, "analytics.event", fmt.Sprintf("dl-spare-ana-%d", r))
		all = append(append(all, spare...), spareAna...)
		// Two discards name dead letters of both batches, highest id
		// first; the third, of no batch, takes the same counter rows.
		discards := [][]int64{{ana[3], ana[0], idx[1]}, {ana[1], idx[3], idx[2]}, {spareAna[0], spare[0]}}

		start := make(chan struct{})
		errs := make([]error, 2+len(discards))
		var wg sync.WaitGroup
		for i, batch := range []string{batchA, batchB} {
			wg.Go(func() {
				<-start
				_, errs[i] = b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "indexer fixed"}, quarantine.RequestMeta{})
			})
		}
		for i, ids := range discards {
			wg.Go(func() {
				<-start
				_, errs[2+i] = b.store.Close(ctx, dlq.CloseInput{IDs: ids, To: dlq.StatusDiscarded, Reason: "duplicate of an earlier event", All: true},
					approver1, quarantine.RequestMeta{})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) {
				require.Failf(t, "a database error", "round %d, operation %d: %v (SQLSTATE %s)", r, i, err, pgErr.Code)
			}
			switch code := quarantine.ErrorCode(err); {
			case err == nil && i < 2:
				submitted++
			case err == nil:
				discarded++
			case code == quarantine.ECONFLICT || code == quarantine.EINVALID:
				refused++
			default:
				require.Failf(t, "an unexpected error", "round %d, operation %d: %v", r, i, err)
			}
		}
	}
	t.Logf("%d rounds: %d submits and %d discards went through, %d refused", rounds, submitted, discarded, refused)
	require.Positive(t, submitted+discarded, "something went through")

	for id, status := range checkHolds(t, b, all) {
		assert.Containsf(t, []dlq.Status{dlq.StatusDiscarded, dlq.StatusQuarantined, dlq.StatusReplayRequested}, status, "dead letter %d", id)
	}

	_, err := dlq.FoldCounters(ctx, b.db.Pool)
	require.NoError(t, err)
	require.NotEmpty(t, all)
	assert.Empty(t, testfactory.CountersDrift(t, b.db.Pool), "the depth counters are exact")
}

// TestHaltRejectAndDiscardWhileWorkersRecordNeverDeadlock runs, round after
// round and while two workers publish and record, the console's state
// changes on requests and dead letters of one tenant and the same item
// types (the counter and group rows the workers move) all at once: a
// cancel of each request of a running batch, an emergency stop of another,
// a reject of a request waiting for approval, a discard of spare dead
// letters and one of dead letters the halted requests hold, a submit of a
// fresh batch, and a person settling each item of a request waiting for
// them (applied, not applied, republish). Each either succeeds or is
// refused (a conflict: the request ended meanwhile, the dead letter is
// still held); none dies as a deadlock victim. Once the workers are idle,
// every dead letter is held by one open request exactly when a replay holds
// it, every request and settled item is what was done to it, the counters
// are exact, and each change has one audit row: a request a person closed,
// each job's end, each item settled, each discard; the chain verifies.
func TestHaltRejectAndDiscardWhileWorkersRecordNeverDeadlock(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const rounds = 12
	// A request per round whose items wait for a person, made before the
	// workers start.
	type settle struct {
		request int64
		items   []int64
	}
	settles := make([]settle, rounds)
	var all, settled []int64
	for r := range settles {
		ids, _ := b.seedN(t, 3, "search.index_update", fmt.Sprintf("hr-settle-%d", r))
		q := b.request(t, ids, replay.SubmitInput{})
		testfactory.NeedsPerson(t, b.db.Pool, q.ID)
		settles[r] = settle{q.ID, ids}
		all = append(all, ids...)
		settled = append(settled, q.ID)
	}
	for range 2 {
		run(t, b.worker(t, replay.WorkerConfig{Batch: 2}))
	}
	mail := func(n int, prefix string) []int64 {
		letters := make([]testfactory.Letter, n)
		for i := range letters {
			id := fmt.Sprintf("%s-%d", prefix, i)
			letters[i] = testfactory.Letter{ItemType: "email.send", MsgID: id, OperationID: "op-" + id, Payload: []byte(`{"to":"x@example.com"}`)}
		}
		return testfactory.DeadLetters(t, b.db.Pool, letters...)
	}
	// submit submits batch at rate items a second per request.
	submit := func(batch string, drafts []replay.Request, rate float64) ([]replay.Request, error) {
		rates := map[int64]float64{}
		for _, d := range drafts {
			rates[d.ID] = rate
		}
		return b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "consumer fixed", Rates: rates}, quarantine.RequestMeta{})
	}
	closedBy := map[int64]string{}                // request → the action that closed it
	reconciled := map[int64]replaypolicy.Choice{} // dead letter → what a person found
	var discarded []int64
	var went, refused int
	var mu sync.Mutex
	for r := range rounds {
		seed := func(n int, what string) []int64 {
			idx, _ := b.seedN(t, n, "search.index_update", fmt.Sprintf("hr-idx-%s-%d", what, r))
			ana, _ := b.seedN(t, n, "analytics.event", fmt.Sprintf("hr-ana-%s-%d", what, r))
			ids := append(append(idx, ana...), mail(n, fmt.Sprintf("hr-mail-%s-%d", what, r))...)
			all = append(all, ids...)
			return ids
		}
		running, stopped, spare, fresh := seed(6, "run"), seed(6, "stop"), seed(2, "spare"), seed(2, "fresh")
		waiting := mail(3, fmt.Sprintf("hr-mail-wait-%d", r))
		all = append(all, waiting...)
		// Two batches run (their mail waits for an approver, who approves
		// the first), one waits for approval, and a fresh one is drafted.
		batchRun, drafts := b.draft(t, oncall, running...)
		runReqs, err := submit(batchRun, drafts, 40)
		require.NoError(t, err)
		batchStop, drafts := b.draft(t, oncall, stopped...)
		stopReqs, err := submit(batchStop, drafts, 40)
		require.NoError(t, err)
		batchWait, drafts := b.draft(t, oncall, waiting...)
		waitReqs, err := submit(batchWait, drafts, 40)
		require.NoError(t, err)
		require.Len(t, waitReqs, 1)
		batchFresh, freshDrafts := b.draft(t, oncall, fresh...)
		var cancels []int64
		var stop int64
		for _, q := range runReqs {
			if q.Status == replay.StatusPendingApproval {
				_, err := b.replays.Approve(ctx, q.ID, approver1, replay.ApproveInput{IntentHex: q.IntentHex()}, quarantine.RequestMeta{})
				require.NoError(t, err)
			}
			cancels = append(cancels, q.ID)
		}
		for _, q := range stopReqs {
			if q.Class == replaypolicy.Rebuildable {
				stop = q.ID
			}
		}
		require.NotZero(t, stop)
		// The last search update of each running batch: the halts put it
		// back in quarantine unless a worker took it first.
		held := []int64{stopped[5], running[5]}
		// Start once the workers are into the running batch.
		wait.Until(t, "a job of the running batch recorded", time.Minute, func() bool {
			var n int
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_jobs WHERE request_id = ANY($1) AND state = 'replayed'`,
				cancels).Scan(&n))
			return n > 0
		})

		type op struct {
			name    string
			request int64  // the request it closes, if any
			action  string // its audit action
			run     func() error
		}
		ops := []op{
			{"stop", stop, "replay.stop", func() error {
				return b.replays.Stop(ctx, stop, approver1, replay.StopInput{Reason: "incident", Typed: replaypolicy.StopPhrase}, quarantine.RequestMeta{})
			}},
			{"reject", waitReqs[0].ID, "replay.reject", func() error {
				return b.replays.Reject(ctx, waitReqs[0].ID, approver1, replay.RejectInput{IntentHex: waitReqs[0].IntentHex(), Version: waitReqs[0].Version, Reason: "wrong template"}, quarantine.RequestMeta{})
			}},
			{"discard", 0, "", func() error {
				_, err := b.store.Close(ctx, dlq.CloseInput{IDs: spare, To: dlq.StatusDiscarded, Reason: "duplicates", All: true}, approver1, quarantine.RequestMeta{})
				return err
			}},
			{"discard held", 0, "", func() error {
				_, err := b.store.Close(ctx, dlq.CloseInput{IDs: held, To: dlq.StatusDiscarded, Reason: "duplicates", All: true}, approver1, quarantine.RequestMeta{})
				return err
			}},
			{"submit", 0, "", func() error {
				_, err := submit(batchFresh, freshDrafts, 200)
				return err
			}},
		}
		for i, choice := range []replaypolicy.Choice{replaypolicy.Applied, replaypolicy.NotApplied, replaypolicy.Republish} {
			q, id := settles[r].request, settles[r].items[i]
			ops = append(ops, op{"reconcile " + string(choice), 0, "", func() error {
				err := b.replays.Reconcile(ctx, q, id, approver1, replay.ReconcileInput{Choice: choice, Note: "checked the index"}, quarantine.RequestMeta{})
				if err == nil {
					mu.Lock()
					reconciled[id] = choice
					mu.Unlock()
				}
				return err
			}})
		}
		for _, id := range cancels {
			ops = append(ops, op{"cancel", id, "replay.cancel", func() error {
				return b.replays.Cancel(ctx, id, oncall, "wrong target", quarantine.RequestMeta{})
			}})
		}
		start := make(chan struct{})
		errs := make([]error, len(ops))
		var wg sync.WaitGroup
		for i, o := range ops {
			wg.Go(func() {
				<-start
				errs[i] = o.run()
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) {
				require.Failf(t, "a database error", "round %d, %s: %v (SQLSTATE %s)", r, ops[i].name, err, pgErr.Code)
			}
			switch code := quarantine.ErrorCode(err); {
			case err == nil:
				went++
				if ops[i].request != 0 {
					closedBy[ops[i].request] = ops[i].action
				}
				switch ops[i].name {
				case "discard":
					discarded = append(discarded, spare...)
				case "discard held":
					discarded = append(discarded, held...)
				}
			case code == quarantine.ECONFLICT || code == quarantine.EINVALID:
				refused++
			default:
				require.Failf(t, "an unexpected error", "round %d, %s: %v", r, ops[i].name, err)
			}
		}
	}
	t.Logf("%d rounds: %d changes went through, %d refused", rounds, went, refused)
	require.NotEmpty(t, closedBy, "some request was closed")

	wait.Until(t, "the workers idle", time.Minute, func() bool {
		var n int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_jobs WHERE state IN ('pending', 'claimed', 'deferred', 'unknown')
            OR EXISTS (SELECT 1 FROM replay_requests WHERE status IN ('approved', 'running'))`).Scan(&n))
		return n == 0
	})

	checkHolds(t, b, all)

	// Statuses: a request a person closed is what they made it.
	for id, action := range closedBy {
		q, err := b.replays.Request(ctx, id)
		require.NoError(t, err)
		want := map[string]replay.Status{"replay.stop": replay.StatusCancelled, "replay.cancel": replay.StatusCancelled, "replay.reject": replay.StatusRejected}[action]
		assert.Equalf(t, want, q.Status, "request %d after %s", id, action)
	}

	// Counters: exact.
	_, err := dlq.FoldCounters(ctx, b.db.Pool)
	require.NoError(t, err)
	assert.Empty(t, testfactory.CountersDrift(t, b.db.Pool), "the counters are exact")

	// Audit: one row per change, and the chain holds.
	closes := keyCounts(t, b, `SELECT object_id || ' ' || action, count(*) FROM audit_log
        WHERE object_type = 'replay_request' AND action IN ('replay.cancel', 'replay.stop', 'replay.reject') AND outcome = 'ok' GROUP BY 1`)
	want := map[string]int64{}
	for id, action := range closedBy {
		want[fmt.Sprintf("%d %s", id, action)] = 1
	}
	assert.Equal(t, want, closes, "one audit row per request a person closed")
	jobs := keyCounts(t, b, `SELECT j.id::text, count(a.seq) FROM replay_jobs j
        LEFT JOIN audit_log a ON a.action = 'replay.item.' || j.state AND a.after->>'job' = j.id::text
        WHERE j.state IN ('replayed', 'cancelled', 'needs_reconciliation') AND j.request_id <> ALL($1)
        GROUP BY 1 HAVING count(a.seq) <> 1`, settled)
	assert.Empty(t, jobs, "jobs whose end is not audited once (job → rows)")
	settledRows := keyCounts(t, b, `SELECT object_id, count(*) FROM audit_log WHERE action = 'replay.item.reconciled' AND outcome = 'ok' GROUP BY 1`)
	want = map[string]int64{}
	for id, choice := range reconciled {
		want[fmt.Sprint(id)] = 1
		status := map[replaypolicy.Choice]dlq.Status{replaypolicy.Applied: dlq.StatusResolved, replaypolicy.NotApplied: dlq.StatusQuarantined,
			replaypolicy.Republish: dlq.StatusReplayed}[choice]
		dl, err := b.store.Get(ctx, id)
		require.NoError(t, err)
		assert.Equalf(t, status, dl.Status, "dead letter %d, found %s", id, choice)
	}
	assert.Equal(t, want, settledRows, "one audit row per item a person settled")
	discards := keyCounts(t, b, `SELECT object_id, count(*) FROM audit_log WHERE action = $1 AND outcome = 'ok' GROUP BY 1`, audit.ActionDeadLetterDiscard)
	want = map[string]int64{}
	for _, id := range discarded {
		want[fmt.Sprint(id)] = 1
	}
	assert.Equal(t, want, discards, "one audit row per discarded dead letter")
	res, err := audit.Verify(ctx, b.db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	assert.True(t, res.OK(), res.Problem)
}

// keyCounts runs q, which selects a text key and a count, and returns the
// counts by key.
func keyCounts(t *testing.T, b *replayBundle, q string, args ...any) map[string]int64 {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), q, args...)
	require.NoError(t, err)
	out := map[string]int64{}
	var k string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&k, &n}, func() error { out[k] = n; return nil })
	require.NoError(t, err)
	return out
}

// checkHolds asserts that each of the dead letters ids a replay holds
// (replay_requested) is held by exactly one open request, each waiting for
// a person by the one request that left it so, and any other by none; it
// returns their statuses.
func checkHolds(t *testing.T, b *replayBundle, ids []int64) map[int64]dlq.Status {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `
        SELECT d.id, d.status, count(i.request_id) FILTER (WHERE r.status IN ('pending_approval', 'approved', 'running')),
               count(i.request_id)
        FROM dead_letters d
        LEFT JOIN replay_items i ON i.dead_letter_id = d.id AND i.held
        LEFT JOIN replay_requests r ON r.id = i.request_id
        WHERE d.id = ANY($1) GROUP BY d.id, d.status`, ids)
	require.NoError(t, err)
	out := map[int64]dlq.Status{}
	var id int64
	var status dlq.Status
	var open, held int
	_, err = pgx.ForEachRow(rows, []any{&id, &status, &open, &held}, func() error {
		out[id] = status
		switch status {
		case dlq.StatusReplayRequested:
			assert.Equalf(t, 1, open, "dead letter %d is requested and held by %d open requests", id, open)
		case dlq.StatusNeedsReconciliation:
			assert.Equalf(t, 1, held, "dead letter %d waits for a person and is held by %d requests", id, held)
		default:
			assert.Zerof(t, held, "dead letter %d is %s and held by %d requests", id, status, held)
		}
		return nil
	})
	require.NoError(t, err)
	require.Len(t, out, len(ids))
	return out
}
