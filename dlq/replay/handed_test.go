package replay_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// handedBundle is a replay bundle whose target stream keeps duplicates for
// a second and whose analytics events are dedupe (one operator), with a
// maker of dead letters of one event (at when it was dead-lettered,
// replayOf its Dlq-Replay-Of: 0 for none).
func handedBundle(t *testing.T, msgID, subject string) (*replayBundle, func(at time.Time, replayOf int64) int64) {
	t.Helper()
	b := setupReplay(t)
	_, err := b.js.UpdateStream(context.Background(), jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	table, err := replaypolicy.Parse("dedupe.toml", []byte(`
[[rule]]
item_type = "analytics.*"
class = "dedupe"
`))
	require.NoError(t, err)
	b.policy.Store(table)
	return b, func(at time.Time, replayOf int64) int64 {
		l := testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, Subject: subject, CorrelationID: "corr-" + msgID,
			Payload: []byte(`{"clicks":8}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}
}

// handedAt reads the marks of request id's job of dead letter dl: when a
// gate first reserved it (first_published_at) and when it was first
// handed to NATS (handed_at; nil: never).
func (b *replayBundle) handedAt(t *testing.T, id, dl int64) (reserved, handed *time.Time) {
	t.Helper()
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT first_published_at, handed_at FROM replay_jobs
        WHERE request_id = $1 AND dead_letter_id = $2`, id, dl).Scan(&reserved, &handed))
	return reserved, handed
}

// TestReservedCancelledUnsentJobIsNoFirstReplay: the publish gate reserves
// the slot of event A's job J1 (first_published_at set) and the requester
// cancels the request while the worker waits before the send: J1 ends
// cancelled, nothing sent, and its handed_at is cleared. A is requested
// again and J2 publishes it; the consumer fails on that replay and it
// comes back as B (Dlq-Replay-Of: A). J2 is A's first replay (the first
// one handed to NATS), so it does not count against B: B is drafted and
// replayed, not skipped as already replayed by the replay it came back
// from.
func TestReservedCancelledUnsentJobIsNoFirstReplay(t *testing.T) {
	t.Parallel()
	const msgID, subject = "handed-cancel-1", "app.acme.analytics.event"
	b, letter := handedBundle(t, msgID, subject)
	ctx := context.Background()
	a := letter(time.Now().Add(-3*time.Hour), 0)

	r1 := b.request(t, []int64{a}, replay.SubmitInput{Reason: "consumer fixed"})
	require.Equal(t, replay.StatusApproved, r1.Status)
	w1 := b.worker(t, replay.WorkerConfig{Batch: 1, Retry: time.Millisecond})
	var cancelled atomic.Bool
	w1.BeforeSend(func(int64, time.Time) {
		if cancelled.Swap(true) {
			return
		}
		// On the worker's goroutine: assert, not require.
		assert.NoError(t, b.replays.Cancel(ctx, r1.ID, oncall, "wrong day", quarantine.RequestMeta{}))
		time.Sleep(20 * time.Millisecond) // the pause is the scenario: longer than the worker waits to read the status again
	})
	_, err := w1.RunOnce(ctx)
	require.NoError(t, err)
	require.True(t, cancelled.Load(), "the gate reserved J1's slot")
	j1 := b.job(t, r1.ID, a)
	require.Equal(t, "cancelled", j1.State, j1.Result)
	require.Equal(t, 0, b.onSubject(t, subject), "nothing of R1 was sent")
	reserved, handed := b.handedAt(t, r1.ID, a)
	// The gate reserved J1 (first_published_at); its record undid the
	// reservation, never handed to NATS (review round 40: a plant stored
	// after it was taken for the job's own publish).
	assert.Nil(t, reserved, "J1's reservation was undone")
	assert.Nil(t, handed, "J1 was never handed to NATS")

	r2 := b.request(t, []int64{a}, replay.SubmitInput{Reason: "consumer fixed, again"})
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, r2.ID, replay.StatusDone)
	require.Equal(t, 1, b.onSubject(t, subject))
	_, handed = b.handedAt(t, r2.ID, a)
	require.NotNil(t, handed, "J2 was handed to NATS")

	back := letter(time.Now(), a)
	d, err := b.store.Get(ctx, back)
	require.NoError(t, err)
	require.NotNil(t, d.ReplayOf, "linked: %v", d.Flags)

	check, reason := draftVerdict(t, b, back)
	assert.Empty(t, reason, "B came back from R2's replay of A, the first one sent (%s)", check)
	r3 := b.request(t, []int64{back}, replay.SubmitInput{Reason: "consumer fixed, third"})
	require.Equal(t, replay.StatusApproved, r3.Status, "%s (%s)", r3.StatusReason, b.jobsText(t, r3.ID))
	done := b.waitFinished(t, r3.ID)
	assert.Equal(t, replay.StatusDone, done.Status, "jobs: %s", b.jobsText(t, r3.ID))
	assert.Equal(t, "replayed", b.job(t, r3.ID, back).State)
}

// TestSentJobSettledNotAppliedStaysFirstReplay: event A's job J1 is
// published (the broker stores it) and its PubAck is lost; past the
// window it needs a person, who settles it "not applied" (cancelled, as a
// cancel before the send ends a job). It was handed to NATS: its
// handed_at stays. The replay failed downstream and came back as B; A is
// replayed again by J2. J1 stays A's first replay, the one B came back
// from, so J2, made after, counts against B: B is left out at draft,
// naming J2's request.
func TestSentJobSettledNotAppliedStaysFirstReplay(t *testing.T) {
	t.Parallel()
	const msgID, subject = "handed-settled-1", "app.acme.analytics.event"
	b, letter := handedBundle(t, msgID, subject)
	ctx := context.Background()
	a := letter(time.Now().Add(-3*time.Hour), 0)

	r1 := b.request(t, []int64{a}, replay.SubmitInput{Reason: "consumer fixed"})
	require.Equal(t, replay.StatusApproved, r1.Status)
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1<<30)
	wait.Until(t, "J1 to need reconciliation", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, r1.ID, a).State == "needs_reconciliation"
	})
	require.Equal(t, 1, b.onSubject(t, subject))

	back := letter(time.Now(), a)
	d, err := b.store.Get(ctx, back)
	require.NoError(t, err)
	require.NotNil(t, d.ReplayOf, "linked: %v", d.Flags)
	// B came back a minute before A is replayed again (a person's settle
	// and a new request take longer than the chain's slack for a clock
	// stepped back, within which a replay of A made after B still counts
	// as one B may have come back from: TestRev38ChildStampedBeforeItsReplayByASteppedClockIsLeftForAPerson).
	_, err = b.db.Pool.Exec(ctx, `UPDATE dead_letters SET received_at = received_at - interval '1 minute' WHERE id = $1`, back)
	require.NoError(t, err)

	require.NoError(t, b.replays.Reconcile(ctx, r1.ID, a, approver1, replay.ReconcileInput{Choice: replaypolicy.NotApplied,
		Note: "analytics has no event handed-settled-1"}, quarantine.RequestMeta{}))
	j1 := b.job(t, r1.ID, a)
	require.Equal(t, "cancelled", j1.State, j1.Result)
	_, handed := b.handedAt(t, r1.ID, a)
	assert.NotNil(t, handed, "J1 was handed to NATS: settling it does not unsay that")

	b.forgotten(t, msgID, time.Second)
	r2 := b.request(t, []int64{a}, replay.SubmitInput{Reason: "consumer fixed, again"})
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, r2.ID, replay.StatusDone)

	check, reason := draftVerdict(t, b, back)
	assert.Equal(t, replaypolicy.CheckLedger, check,
		"B came back from J1, A's first replay; request %d replayed A after it (reason %q)", r2.ID, reason)
	assert.Contains(t, reason, fmt.Sprintf("already replayed successfully by replay request %d", r2.ID))
}

// TestGateMarkSurvivesWorkerDeathBeforeSend: a worker whose gate marked a
// job and which then dies before it records (here: stopped before the
// send, and gone before its record) leaves handed_at set, as it must: a
// worker that dies between the gate and the send cannot say whether it
// sent, so the job counts as one that may have been. The same stop with
// the record written clears it.
func TestGateMarkSurvivesWorkerDeathBeforeSend(t *testing.T) {
	t.Parallel()
	const subject = "app.acme.analytics.event"
	b, _ := handedBundle(t, "handed-death-1", subject)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		records bool
	}{{"Dies", false}, {"Records", true}} {
		id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: "handed-death-" + tc.name,
			Subject: subject, Payload: []byte("{}")})
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replay.StatusApproved, req.Status)
		wctx, stop := context.WithCancel(ctx)
		w := b.worker(t, replay.WorkerConfig{Owner: "dying-" + tc.name, Lease: time.Minute})
		w.BeforeSend(func(int64, time.Time) { stop() }) // stopped after the gate, before the send
		w.AfterPublish(func([]int64) bool { return tc.records })
		_, err := w.RunOnce(wctx)
		stop()
		if !tc.records {
			require.ErrorIs(t, err, replay.ErrStopped)
		}
		require.Equal(t, 0, b.onSubject(t, subject), "%s: nothing was sent", tc.name)
		_, handed := b.handedAt(t, req.ID, id)
		if tc.records {
			assert.Nil(t, handed, "%s: the record says it was never handed (%s)", tc.name, b.jobsText(t, req.ID))
		} else {
			assert.NotNil(t, handed, "%s: a worker gone before its record may have sent it", tc.name)
		}
	}
}

// TestMigration0044CountsJobsThatMayHaveBeenSentAsHanded runs migration
// 0044 again over jobs as they stood before it (its down, then its up,
// on this test's own database): every job a publish of which may have
// been sent (a gate marked it, or its state says one may have landed)
// counts as handed, dated by its first mark, else its last change; a job
// no gate marked and whose state says nothing was sent does not. A job a
// gate reserved and that was then cancelled unsent cannot be told apart
// any more: it counts, as it did before.
func TestMigration0044CountsJobsThatMayHaveBeenSentAsHanded(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	jobs := []struct {
		name, state      string
		reserved, marked bool // first_published_at, first_attempt_at
		handed           bool
	}{
		{"Waiting", "pending", false, false, false},
		{"Blocked", "blocked", false, false, false},
		{"CancelledBeforeAnyGate", "cancelled", false, false, false},
		{"ReservedReleased", "pending", true, false, true},
		{"ReservedCancelled", "cancelled", true, false, true},
		{"ReplayedBefore0014", "replayed", false, false, true},
		{"UnknownMarked", "unknown", false, true, true},
		{"NeedsReconciliationBefore0014", "needs_reconciliation", false, false, true},
	}
	var ids []int64
	for _, j := range jobs {
		ids = append(ids, b.seedItem(t, "search.index_update", "handed-0044-"+j.name, nil, "{}"))
	}
	req := b.request(t, ids, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	all, err := migrations.All()
	require.NoError(t, err)
	i := slices.IndexFunc(all, func(m migrations.Migration) bool { return m.Number == 44 })
	require.GreaterOrEqual(t, i, 0, "migration 0044")
	m := all[i]
	_, err = b.db.OwnerPool.Exec(ctx, m.Down)
	require.NoError(t, err)
	reserved := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	for i, j := range jobs {
		_, err := b.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET state = $3,
            first_published_at = CASE WHEN $4 THEN $6::timestamptz END, first_attempt_at = CASE WHEN $5 THEN $6::timestamptz END
            WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, ids[i], j.state, j.reserved, j.marked, reserved)
		require.NoError(t, err)
	}
	_, err = b.db.OwnerPool.Exec(ctx, m.Up)
	require.NoError(t, err)
	for i, j := range jobs {
		var handed *time.Time
		var updated time.Time
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT handed_at, updated_at FROM replay_jobs WHERE request_id = $1 AND dead_letter_id = $2`,
			req.ID, ids[i]).Scan(&handed, &updated))
		if !j.handed {
			assert.Nil(t, handed, j.name)
			continue
		}
		if assert.NotNil(t, handed, j.name) {
			want := updated
			if j.reserved || j.marked {
				want = reserved
			}
			assert.True(t, want.Equal(*handed), "%s: handed at %v, want %v", j.name, *handed, want)
		}
	}
}
