package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// chainTwiceSetup replays dead letter A (analytics.event: dedupe, no
// approver) twice: request R0's publish loses its PubAck past the window
// and a person settles it "not applied"; request R1 replays it again.
// letter makes a dead letter of the same message, linked to A and R1
// when replayOf is set (it came back from R1's replay). The worker w1 of
// R1 is returned before it runs, with lose PubAcks lost.
func chainTwiceSetup(t *testing.T, b *replayBundle, msgID string, lose int) (a int64, r1 replay.Request, w1 *replay.Worker, letter func(replayOf, req int64) int64) {
	t.Helper()
	ctx := context.Background()
	letter = func(replayOf, req int64) int64 {
		at := time.Now()
		if replayOf == 0 {
			at = at.Add(-3 * time.Hour)
		}
		l := testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, CorrelationID: "corr-" + msgID, Payload: []byte(`{"clicks":4}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)},
				dlq.UpstreamPrefix + dlq.HeaderReplayRequest: {fmt.Sprint(req)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}
	a = letter(0, 0)
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	r0 := b.request(t, []int64{a}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1<<30)
	wait.Until(t, "R0 to need reconciliation", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, r0.ID, a).State == "needs_reconciliation"
	})
	require.NoError(t, b.replays.Reconcile(ctx, r0.ID, a, approver1, replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "not there"}, quarantine.RequestMeta{}))
	b.forgotten(t, msgID, time.Second)
	r1 = b.request(t, []int64{a}, replay.SubmitInput{Reason: "again"})
	w1 = b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	if lose > 0 {
		// A retry of R1 relies on the window covering its first attempt.
		// The longer window covers R0's stored publish too until it is as
		// old: R1's first attempt would be answered Duplicate for R0's
		// replay of A, which goes to a person (an earlier request's
		// replay of the item, TestRev39EarlierRequestsReplayOfTheItemIsNotPublishedAgain).
		// R1 publishes after it.
		_, err = b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: 5 * time.Second})
		require.NoError(t, err)
		r0Stored := b.published(t)[msgID].Time
		// The server forgets a message id on a timer, up to a window after
		// the window has passed (its purge runs once a window): twice it,
		// and a second for the clocks.
		wait.Until(t, "R0's publish out of the longer window", time.Minute, func() bool {
			return time.Since(r0Stored) > 2*5*time.Second+time.Second
		})
		w1 = b.worker(t, replay.WorkerConfig{Retry: time.Second})
		loseAcks(w1, lose)
	}
	return a, r1, w1, letter
}

// TestRev38ChildOfAnOriginReplayedTwiceIsLeftForAPerson: dead letter A was
// replayed twice (R0, settled "not applied"; R1, stored), and B came back
// from R1's replay (Dlq-Replay-Of: A). The chain explains only A's first
// replay, R0, so R1's counted against B, and B, a dedupe item, was skipped
// as "already replayed successfully by R1": the replay it came back from,
// whose effect failed. It is now left for a person, at the draft.
func TestRev38ChildOfAnOriginReplayedTwiceIsLeftForAPerson(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	const subject = "app.acme.analytics.event"
	a, r1, w1, letter := chainTwiceSetup(t, b, "rev38-twice-1", 0)
	run(t, w1)
	b.waitStatus(t, r1.ID, replay.StatusDone)
	require.Equal(t, 2, b.onSubject(t, subject), "R0's publish (its PubAck lost) and R1's")

	back := letter(a, r1.ID)
	check, reason := draftVerdict(t, b, back)
	assert.Equal(t, replaypolicy.CheckLedger, check)
	assert.Contains(t, reason, "was replayed more than once")
	assert.Contains(t, reason, "resolve it by hand")
	assert.NotContains(t, reason, "the item is skipped, not re-sent", "B came back from a replay of A; it is not skipped as done by that replay")
}

// TestRev38ChildRequestedWhileTheSecondReplayWasUnknownIsNotDone: as
// above, but B is requested while R1's outcome is still unknown (its
// PubAck lost, a retry due): the draft cannot know, and B's job waits for
// R1. Once R1 is replayed, B's job is blocked for a person at execution,
// not skipped: before, its request ended done ("1 skipped") and B was
// shown replayed, though nothing of it was published.
func TestRev38ChildRequestedWhileTheSecondReplayWasUnknownIsNotDone(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	a, r1, w1, letter := chainTwiceSetup(t, b, "rev38-twice-2", 1)
	wait.Until(t, "R1's outcome unknown", time.Minute, func() bool {
		_, err := w1.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, r1.ID, a).State == "unknown"
	})
	back := letter(a, r1.ID)
	rb := b.request(t, []int64{back}, replay.SubmitInput{Reason: "consumer fixed"})
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, r1.ID, replay.StatusDone)
	b.waitFinished(t, rb.ID)
	j := b.job(t, rb.ID, back)
	assert.Equal(t, "blocked", j.State, j.Result)
	assert.Contains(t, j.Result, "was replayed more than once")
	d, err := b.store.Get(ctx, back)
	require.NoError(t, err)
	assert.NotEqual(t, dlq.Status("replayed"), d.Status, "B was never published")
}

// TestRev38OriginWithNoReplaySentHidesNoLedgerRow: B is linked to its
// origin A, whose only job no longer counts as sent (its record cleared
// handed_at: the broker stored nothing of it). A has no first replay, so
// the chain explains no ledger row; the replay the ledger holds of the
// message (here a sibling's) counts against B at the draft as it does at
// execution. Before, the walk's array held a NULL, "l.job_id = ANY" was
// NULL for every row, and NOT of it dropped them all: the draft said B
// was never replayed, and only the worker skipped it.
func TestRev38OriginWithNoReplaySentHidesNoLedgerRow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID = "rev38-nofirst"
	letter := func(replayOf, req int64) int64 {
		l := testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, CorrelationID: "corr-" + msgID, Payload: []byte(`{"clicks":5}`), At: time.Now().Add(-time.Hour)}
		if replayOf != 0 {
			l.At = time.Now()
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)},
				dlq.UpstreamPrefix + dlq.HeaderReplayRequest: {fmt.Sprint(req)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}
	a := letter(0, 0)
	ra := b.request(t, []int64{a}, replay.SubmitInput{})
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, ra.ID, replay.StatusDone)
	back := letter(a, ra.ID)
	d, err := b.store.Get(ctx, back)
	require.NoError(t, err)
	require.NotNil(t, d.ReplayOf, "linked to its origin")
	check, reason := draftVerdict(t, b, back)
	require.Empty(t, check, "A's one replay is the one B came back from: not counted (%s)", reason)

	// A's job no longer counts as sent; the ledger's row of it stays.
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET handed_at = NULL WHERE dead_letter_id = $1`, a)
	require.NoError(t, err)
	check, reason = draftVerdict(t, b, back)
	assert.Equal(t, replaypolicy.CheckLedger, check, "the ledger's replay of the message counts: %s", reason)
}

// TestRev38ChildStampedBeforeItsReplayByASteppedClockIsLeftForAPerson:
// as TestRev38ChildOfAnOriginReplayedTwiceIsLeftForAPerson, but the
// database's clock stepped back between R1's publish and B's arrival (a
// failover to a primary whose clock lags, an NTP step): B reads as stored
// 5 ms before R1 was first published. R1 still counts as a replay B may
// have come back from (within chainSlack), and B is left for a person,
// not skipped by it.
func TestRev38ChildStampedBeforeItsReplayByASteppedClockIsLeftForAPerson(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	a, r1, w1, letter := chainTwiceSetup(t, b, "rev38-twice-3", 0)
	run(t, w1)
	b.waitStatus(t, r1.ID, replay.StatusDone)
	back := letter(a, r1.ID)
	tag, err := b.db.Pool.Exec(ctx, `UPDATE dead_letters SET received_at = (SELECT first_published_at FROM replay_jobs WHERE request_id = $1 AND dead_letter_id = $2) - interval '5 milliseconds'
        WHERE id = $3`, r1.ID, a, back)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	check, reason := draftVerdict(t, b, back)
	assert.Equal(t, replaypolicy.CheckLedger, check)
	assert.Contains(t, reason, "was replayed more than once")
}

// forgotten waits until the server has forgotten the id of msgID's stored
// publish, under a window of window: it purges ids on a timer once a
// window, so an id stays up to a window after its window passed (twice
// it, and a second for the clocks). A new request's publish of the message
// before then is answered Duplicate for that earlier replay and goes to a
// person (earlierReplayHeld), as it should; the steps of a test between a
// reconciliation and a new request may take less than that, on a loaded
// machine too (the server's purge timer runs late then).
func (b *replayBundle) forgotten(t *testing.T, msgID string, window time.Duration) {
	t.Helper()
	m, ok := b.published(t)[msgID]
	require.True(t, ok, "%s was stored", msgID)
	wait.Until(t, "the server to forget the id of "+msgID, time.Minute, func() bool {
		return time.Since(m.Time) > 2*window+time.Second
	})
}
