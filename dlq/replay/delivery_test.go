package replay_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
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

// The acceptance tests of issue 12 on the worker's side of a replay: the
// target stream's duplicate window, unknown outcomes, recording after a
// publish, the rate across a restart, and cancels of claimed jobs. Each
// asserts what the target stream holds.

// job is one job of a request as the tests read it.
type jobRow struct {
	State, Result  string
	Attempts       int
	Deferrals      int
	Duplicate      bool
	NotBefore      time.Time
	FirstAttemptAt *time.Time
}

func (b *replayBundle) job(t *testing.T, requestID, deadLetterID int64) jobRow {
	t.Helper()
	var j jobRow
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT state, result, attempts, deferrals, duplicate, not_before, first_attempt_at
        FROM replay_jobs WHERE request_id = $1 AND dead_letter_id = $2`, requestID, deadLetterID).
		Scan(&j.State, &j.Result, &j.Attempts, &j.Deferrals, &j.Duplicate, &j.NotBefore, &j.FirstAttemptAt))
	return j
}

// streamMsgs reads every message of stream s, in order.
func streamMsgs(t *testing.T, s jetstream.Stream) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	info, err := s.Info(ctx)
	require.NoError(t, err)
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted
		}
		out = append(out, m)
	}
	return out
}

// TestDuplicateWindowDefersReplay publishes an original to a target stream
// with a short duplicate window, dead-letters it and replays it inside the
// window: the worker defers the job until the window has passed (the item
// says so, with the time) and then publishes exactly one new message. A
// second dead letter says its original failed an hour ago (a producer's
// clock behind): the first attempt goes, the broker answers Duplicate, the
// worker reads back the message the broker kept, sees it is not its own,
// and defers again; after the window, one new message. The window (10 s)
// outlasts the setup between the original's publish and the worker's
// first look on a slow machine: both cases need the original still in it.
func TestDuplicateWindowDefersReplay(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const window = 10 * time.Second
	events := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: window})
	original := func(msgID, subject string) time.Time {
		ack, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: []byte(`{"v":1}`)}, jetstream.WithMsgID(msgID))
		require.NoError(t, err)
		m, err := events.GetMsg(ctx, ack.Sequence)
		require.NoError(t, err)
		return m.Time
	}
	deadLetter := func(msgID, subject string, firstFailed time.Time) int64 {
		return testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID, Subject: subject,
			Payload: []byte(`{"v":1}`), Headers: map[string][]string{dlq.HeaderFirstFailedAt: {firstFailed.UTC().Format(time.RFC3339Nano)}}})
	}

	t.Run("Scheduled", func(t *testing.T) {
		const subject = "events.acme.search.index_update"
		stored := original("win-1", subject)
		id := deadLetter("win-1", subject, stored)
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replay.StatusApproved, req.Status)
		run(t, b.worker(t, replay.WorkerConfig{}))

		var j jobRow
		wait.Until(t, "the job to be deferred", time.Minute, func() bool { j = b.job(t, req.ID, id); return j.State == "deferred" })
		assert.Contains(t, j.Result, "deferred until")
		assert.Contains(t, j.Result, `stream EVENTS drops message id "win-1" as a duplicate`)
		assert.False(t, j.NotBefore.Before(stored.Add(window)), "not before the original's window has passed: %s, stored %s", j.NotBefore, stored)
		assert.Nil(t, j.FirstAttemptAt, "never attempted inside the window")
		items, err := b.replays.Items(ctx, req.ID, 1)
		require.NoError(t, err)
		assert.Equal(t, replay.JobDeferred, items[0].Outcome)
		require.NotNil(t, items[0].Until)
		p, err := b.replays.Progress(ctx, req.ID)
		require.NoError(t, err)
		assert.Equal(t, 1, p.Deferred)

		done := b.waitFinished(t, req.ID)
		assert.Equal(t, replay.StatusDone, done.Status)
		msgs := onSubjectMsgs(t, events, subject)
		require.Len(t, msgs, 2, "the original and exactly one replay")
		assert.Equal(t, fmt.Sprint(id), msgs[1].Header.Get(replay.HeaderReplayOf))
		assert.False(t, msgs[1].Time.Before(stored.Add(window)), "the replay is stored after the window: %s, original %s", msgs[1].Time, stored)
		assert.Equal(t, "replayed", b.job(t, req.ID, id).State)
		d, err := b.store.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, dlq.StatusReplayed, d.Status)
	})

	t.Run("DuplicateOnFirstAttempt", func(t *testing.T) {
		const subject = "events.acme.search.reindex"
		stored := original("win-2", subject)
		id := deadLetter("win-2", subject, stored.Add(-time.Hour)) // the producer's clock says an hour ago
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		run(t, b.worker(t, replay.WorkerConfig{}))

		var j jobRow
		wait.Until(t, "the broker's Duplicate to defer the job", time.Minute, func() bool {
			j = b.job(t, req.ID, id)
			return j.Deferrals > 0 || j.State == "replayed"
		})
		require.Equal(t, 1, j.Deferrals, "deferred once: %+v", j)
		assert.Contains(t, j.Result, "not this replay's")
		assert.Nil(t, j.FirstAttemptAt, "the attempt did not land: it is a first attempt again")
		b.waitStatus(t, req.ID, replay.StatusDone)
		msgs := onSubjectMsgs(t, events, subject)
		require.Len(t, msgs, 2, "the original and exactly one replay")
		assert.Equal(t, fmt.Sprint(req.ID), msgs[1].Header.Get(replay.HeaderReplayRequest))
		assert.False(t, msgs[1].Time.Before(stored.Add(window)))
		j = b.job(t, req.ID, id)
		assert.Equal(t, "replayed", j.State)
		assert.False(t, j.Duplicate)
	})
}

// onSubjectMsgs reads the messages of stream s on subject, in order.
func onSubjectMsgs(t *testing.T, s jetstream.Stream, subject string) []*jetstream.RawStreamMsg {
	t.Helper()
	var out []*jetstream.RawStreamMsg
	for _, m := range streamMsgs(t, s) {
		if m.Subject == subject {
			out = append(out, m)
		}
	}
	return out
}

// loseAcks makes w lose the PubAcks of its first n publishes (the broker
// stored them; the answer never came).
func loseAcks(w *replay.Worker, n int) *atomic.Int32 {
	var lost atomic.Int32
	w.OnAck(func(_ int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		if int(lost.Load()) < n {
			lost.Add(1)
			return nil, context.DeadlineExceeded
		}
		return a, err
	})
	return &lost
}

// TestDuplicateAfterUnknownIsReplayed loses the PubAck of a first publish
// the broker stored: the job is unknown, then retried under the same
// message id; the broker answers Duplicate, the message it kept is this
// replay's own, so the item is replayed, recorded once in the ledger, and
// the target stream holds it once. When the kept message cannot be read
// back (deleted since), nothing shows it was ours (anything published
// under the id since the first attempt may hold it:
// TestRevReplay7UnreadableKeptMessageOnRetryIsNotProofOfOurs): the job
// needs reconciliation, nothing is published again, and the ledger does
// not hold it.
func TestDuplicateAfterUnknownIsReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		delete bool
		state  string
		want   string
	}{
		{"KeptMessageRead", false, "replayed", "this replay's own earlier publish"},
		{"KeptMessageGone", true, "needs_reconciliation", "could not be read back"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgID := "unknown-" + tc.name
			id := b.seedItem(t, "search.index_update", msgID, nil, "{}")
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
			loseAcks(w, 1)
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)
			j := b.job(t, req.ID, id)
			require.Equal(t, "unknown", j.State, j.Result)
			assert.Contains(t, j.Result, "no PubAck")
			require.NotNil(t, j.FirstAttemptAt, "the first attempt's time is kept: the window is counted from it")
			msgs := b.published(t)
			require.Contains(t, msgs, msgID, "the broker stored the first publish")
			if tc.delete {
				require.NoError(t, b.target.DeleteMsg(ctx, msgs[msgID].Sequence)) // the id stays in the window
			}

			wait.Until(t, "the retry", time.Minute, func() bool {
				_, err := w.RunOnce(ctx)
				require.NoError(t, err)
				return b.job(t, req.ID, id).State != "unknown"
			})
			j = b.job(t, req.ID, id)
			assert.Equal(t, tc.state, j.State, j.Result)
			assert.Contains(t, j.Result, "answered Duplicate")
			assert.Equal(t, !tc.delete, j.Duplicate, "recorded as a Duplicate PubAck of ours only when it is shown to be ours")
			assert.Contains(t, j.Result, tc.want)
			assert.Equal(t, 2, j.Attempts)
			var ledger int
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_ledger WHERE request_id = $1`, req.ID).Scan(&ledger))
			assert.Equal(t, map[bool]int{false: 1, true: 0}[tc.delete], ledger, "the ledger holds what the broker is shown to have stored")
			n := 0
			for _, m := range streamMsgs(t, b.target) {
				if m.Header.Get(dlq.HeaderNatsMsgID) == msgID {
					n++
				}
			}
			assert.Equal(t, map[bool]int{false: 1, true: 0}[tc.delete], n, "one effect: the retry was dropped as a duplicate")
			b.waitStatus(t, req.ID, map[bool]replay.Status{false: replay.StatusDone, true: replay.StatusDoneWithProblems}[tc.delete])
		})
	}
}

// TestUnknownOutcomeStopsAfterWindow loses every PubAck of a job whose
// target keeps ids for 6 s: the worker retries under the same message id
// (each retry dropped by the broker) only while the window covers the
// first attempt, then stops: needs_reconciliation, nothing more published.
// A person then settles it: "applied" makes it replayed (the ledger holds
// it); on another item, after the target was found without it, "not
// applied, republish" publishes it once more. The margin is the
// console's default (1 s), not the tests' 100 ms: the last retry goes
// that long before the window ends, and must reach the broker inside it
// on a slow machine too; the window leaves room for a retry before it.
func TestUnknownOutcomeStopsAfterWindow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	cfg := b.config(t)
	cfg.WindowMargin = replay.DefaultWindowMargin
	b.replays = replay.New(b.db.Pool, cfg)
	ctx := context.Background()
	const window = 6 * time.Second
	short := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: window})
	seed := func(msgID string) int64 {
		return b.seedItem(t, "search.index_update", msgID, nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, "{}")
	}
	applied, republish := seed("lost-1"), seed("lost-2")
	req := b.request(t, []int64{applied, republish}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Retry: 100 * time.Millisecond})
	lost := loseAcks(w, 1<<30)
	run(t, w)

	done := b.waitStatus(t, req.ID, replay.StatusDoneWithProblems)
	assert.Contains(t, done.StatusReason, "2 need reconciliation")
	for _, id := range []int64{applied, republish} {
		j := b.job(t, req.ID, id)
		assert.Equal(t, "needs_reconciliation", j.State)
		assert.Contains(t, j.Result, "no longer covers it")
		assert.Greater(t, j.Attempts, 1, "retried while the window covered the first attempt")
		require.NotNil(t, j.FirstAttemptAt)
		d, err := b.store.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, dlq.StatusNeedsReconciliation, d.Status)
	}
	publishes := lost.Load()
	assert.Len(t, streamMsgs(t, short), 2, "every retry inside the window was dropped as a duplicate: one message per item")
	assert.Equal(t, publishes, lost.Load(), "nothing is published once the window no longer covers the first attempt")

	// Not the requester, by another account with their mailbox either
	// (separation of duties, replaypolicy.SamePerson): refused, audited.
	oncallElsewhere := quarantine.Actor{Issuer: "https://other-idp.example", Subject: "x9", Email: "OnCall@example.com"}
	err := b.replays.Reconcile(ctx, req.ID, republish, oncallElsewhere,
		replay.ReconcileInput{Choice: replaypolicy.Republish, Note: "trust me"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "%v", err)
	assert.Equal(t, "needs_reconciliation", b.job(t, req.ID, republish).State)
	var deniedRows int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'replay.item.reconciled' AND outcome = 'denied' AND actor_subject = 'x9'`).Scan(&deniedRows))
	assert.Equal(t, 1, deniedRows)

	// A person settles them: what they decide is audited with the note.
	err = b.replays.Reconcile(ctx, req.ID, applied, approver1, replay.ReconcileInput{Choice: replaypolicy.Applied}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "a decision says what was checked: %v", err)
	require.NoError(t, b.replays.Reconcile(ctx, req.ID, applied, approver1,
		replay.ReconcileInput{Choice: replaypolicy.Applied, Note: "the index holds lost-1 at version 1"}, quarantine.RequestMeta{}))
	assert.Equal(t, "replayed", b.job(t, req.ID, applied).State)
	d, err := b.store.Get(ctx, applied)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusResolved, d.Status, "found applied by a person: resolved, not replayed")
	err = b.replays.Reconcile(ctx, req.ID, applied, approver1, replay.ReconcileInput{Choice: replaypolicy.Applied, Note: "again"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "settled once")

	require.NoError(t, short.Purge(ctx)) // the target was found without lost-2
	w.OnAck(nil)
	require.NoError(t, b.replays.Reconcile(ctx, req.ID, republish, approver1,
		replay.ReconcileInput{Choice: replaypolicy.Republish, Note: "the index has no lost-2"}, quarantine.RequestMeta{}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	msgs := streamMsgs(t, short)
	require.Len(t, msgs, 1, "republished once")
	assert.Equal(t, "lost-2", msgs[0].Header.Get(dlq.HeaderNatsMsgID))
	var audited int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'replay.item.reconciled' AND actor_subject = $1`,
		approver1.Subject).Scan(&audited))
	assert.Equal(t, 2, audited)
}

// TestRetryNotSentPastWindow retries a job whose PubAck was lost (the
// broker stored its first publish) at a slot of its request that comes
// after the target's duplicate window stopped covering that publish,
// although it still covered it when the claim judged the job: the retry
// is not sent (the broker would store it as a second message, a second
// effect); the job waits for a person, and the target holds the message
// once.
func TestRetryNotSentPastWindow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const window = 5 * time.Second
	events := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: window})
	const subject = "events.acme.search.index_update"
	id := b.seedItem(t, "search.index_update", "late-slot", nats.Header{dlq.HeaderOriginalSubject: {subject}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	// Its first publish was stored now and its PubAck lost: the job is
	// unknown, due for its retry.
	b.ackLost(t, events, req.ID, subject, "late-slot")
	// The request's next slot comes a second after the window (the slots
	// before it went to other jobs of the request).
	_, err := b.db.Pool.Exec(ctx, `UPDATE replay_requests SET rate_next = now() + make_interval(secs => $2) WHERE id = $1`,
		req.ID, (window + time.Second).Seconds())
	require.NoError(t, err)

	_, err = b.worker(t, replay.WorkerConfig{}).RunOnce(ctx)
	require.NoError(t, err)
	j := b.job(t, req.ID, id)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "no longer covers it")
	assert.Len(t, onSubjectMsgs(t, events, subject), 1, "the retry was not sent past the window")
}

// ackLost publishes msgID to subject as the first publish of request
// id's one job, stored by events, and makes the job unknown as its PubAck
// lost would: due for its retry now. The gate recorded the stream it was
// sent to (migration 0036), as it does: without it the retry is judged by
// the clocks, and a stream made in the same second as the publish is "too
// close to tell".
func (b *replayBundle) ackLost(t *testing.T, events jetstream.Stream, id int64, subject, msgID string) {
	t.Helper()
	ctx := context.Background()
	_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: []byte("{}")}, jetstream.WithMsgID(msgID))
	require.NoError(t, err)
	info, err := events.Info(ctx)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET state = 'unknown', attempts = 1, first_attempt_at = now(), first_published_at = now(),
        not_before = now(), first_stream = $2, first_stream_created = $3 WHERE request_id = $1`, id, info.Config.Name, info.Created)
	require.NoError(t, err)
}

// TestRecordRetriedAfterPublish holds the job's row locked while the
// worker records what it published (a database that answers nothing for a
// while): each attempt times out and is made again under the same fencing
// token; when the database answers, the outcome is recorded by the worker
// that published it. A second worker never takes the job over, and the
// target stream holds the message once.
func TestRecordRetriedAfterPublish(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "record-1", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Owner: "publisher", Lease: 20 * time.Second, RecordTimeout: 200 * time.Millisecond})
	var blip pgx.Tx
	other := b.worker(t, replay.WorkerConfig{Owner: "other"})
	w.AfterPublish(func([]int64) bool {
		tx, err := b.db.Pool.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SELECT 1 FROM replay_jobs WHERE request_id = $1 FOR UPDATE`, req.ID)
		require.NoError(t, err)
		blip = tx
		// Another worker runs from here, when the job is claimed and
		// published under the first one's lease (started before, it could
		// claim the job first): it would take the job over if the lease
		// were let go.
		run(t, other)
		return true
	})
	var failed atomic.Int32
	released := make(chan struct{})
	w.RecordFailed(func(attempt int, err error) {
		if failed.Add(1) == 2 {
			require.NoError(t, blip.Rollback(ctx))
			close(released)
		}
	})
	_, err := w.RunOnce(ctx)
	require.NoError(t, err)
	select {
	case <-released:
	default:
		t.Fatal("the record succeeded while the request was locked")
	}
	assert.GreaterOrEqual(t, failed.Load(), int32(2), "recording failed, and was tried again")
	j := b.job(t, req.ID, id)
	assert.Equal(t, "replayed", j.State)
	assert.Equal(t, 1, j.Attempts, "one claim: nobody published it again")
	b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Len(t, streamMsgs(t, b.target), 1)
	var owner string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT split_part(actor_subject, ':', 2) FROM audit_log
        WHERE action = 'replay.item.replayed' AND object_id = $1`, fmt.Sprint(id)).Scan(&owner))
	assert.Equal(t, "publisher", owner)
}

// sendTimes is a JetStream that notes when each asynchronous publish (a
// worker's) is made.
type sendTimes struct {
	jetstream.JetStream
	mu    sync.Mutex
	times []time.Time
}

func (s *sendTimes) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	s.mu.Lock()
	s.times = append(s.times, time.Now())
	s.mu.Unlock()
	return s.JetStream.PublishMsgAsync(m, opts...)
}

// TestRateHeldAcrossRestart replays a backlog of 24 items (all due) at 4
// per second, kills the worker in the middle (it neither records nor
// releases what it claimed) and, once its lease has run out, starts two
// new workers. No second ever held more than the rate and one, neither of
// the workers' publishes (timed when the workers make them; retries of
// what the killed worker published count too) nor of the messages in the
// target stream (by its timestamps), and every item is there once.
func TestRateHeldAcrossRestart(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const rate, n = 4.0, 24
	ids, msgIDs := b.seedN(t, n, "search.index_update", "rate")
	batch, drafts := b.draft(t, oncall, ids...)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "slowly", Rates: map[int64]float64{drafts[0].ID: rate}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	id := reqs[0].ID
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, id) // a backlog: every job due
	require.NoError(t, err)
	sends := &sendTimes{JetStream: b.js}

	// The first worker is killed after three messages: it stops where it
	// is and records nothing, as a process killed would. Its lease is long
	// enough for three messages on a slow machine (a worker publishes only
	// in the first two thirds of its lease: a short one could end its
	// claim, and its run, before the third); it runs out once the worker
	// is dead, and the new workers start at once.
	first := b.workerOn(t, sends, replay.WorkerConfig{Owner: "killed", Lease: time.Minute})
	first.AfterPublish(func([]int64) bool { return false })
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { first.Run(wctx) })
	wait.Until(t, "three messages", time.Minute, func() bool { return len(streamMsgs(t, b.target)) >= 3 })
	cancel()
	wg.Wait()
	require.Less(t, len(streamMsgs(t, b.target)), n, "killed in the middle")
	b.leaseRunsOut(t, id)

	// A few jobs a claim each, so that both hold jobs of the request at once.
	run(t, b.workerOn(t, sends, replay.WorkerConfig{Owner: "restarted-1", Batch: 4}))
	run(t, b.workerOn(t, sends, replay.WorkerConfig{Owner: "restarted-2", Batch: 4}))
	b.waitStatus(t, id, replay.StatusDone)

	seen := map[string]int{}
	var stored []time.Time
	for _, m := range streamMsgs(t, b.target) {
		seen[m.Header.Get(dlq.HeaderNatsMsgID)]++
		stored = append(stored, m.Time)
	}
	for _, m := range msgIDs {
		assert.Equal(t, 1, seen[m], "message %s once", m)
	}
	sends.mu.Lock()
	sent := slices.Clone(sends.times)
	sends.mu.Unlock()
	assert.GreaterOrEqual(t, len(sent), n)
	for what, times := range map[string][]time.Time{"publishes": sent, "stored messages": stored} {
		at, most := mostInASecond(times)
		assert.LessOrEqual(t, most, int(rate)+1, "the second from %s holds %d %s", at.Format("15:04:05.000"), most, what)
	}
}

// mostInASecond is the most of times within a second from one of them,
// and that one.
func mostInASecond(times []time.Time) (time.Time, int) {
	times = slices.SortedFunc(slices.Values(times), time.Time.Compare)
	var from time.Time
	most := 0
	for i, start := range times {
		in := 0
		for _, at := range times[i:] {
			if at.Sub(start) < time.Second {
				in++
			}
		}
		if in > most {
			from, most = start, in
		}
	}
	return from, most
}

// TestCancelStopsClaimedJobs cancels a request while a worker holds every
// one of its jobs (a backlog, all due) at 4 per second: the worker sees the cancel before its
// next publish, so at most the message in flight lands; every job not
// published ends cancelled, its dead letter back in quarantine, and the
// target stream holds exactly the items recorded as replayed.
func TestCancelStopsClaimedJobs(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	ids, _ := b.seedN(t, 20, "search.index_update", "claimed")
	batch, drafts := b.draft(t, oncall, ids...)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "slow", Rates: map[int64]float64{drafts[0].ID: 4}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	id := reqs[0].ID
	// All due before the worker starts, so its first claim takes every job
	// (a worker started first could claim the first job alone, publish it,
	// and never hold all twenty).
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, id)
	require.NoError(t, err)
	run(t, b.worker(t, replay.WorkerConfig{Lease: time.Minute}))
	wait.Until(t, "every job claimed and two published", time.Minute, func() bool {
		return b.jobStates(t, id)["claimed"] == 20 && len(streamMsgs(t, b.target)) >= 2
	})
	require.NoError(t, b.replays.Cancel(ctx, id, oncall, "wrong target", quarantine.RequestMeta{}))
	atCancel := len(streamMsgs(t, b.target))
	wait.Until(t, "no job left running", time.Minute, func() bool {
		s := b.jobStates(t, id)
		return s["pending"]+s["claimed"]+s["deferred"]+s["unknown"] == 0
	})
	s := b.jobStates(t, id)
	published := len(streamMsgs(t, b.target))
	assert.LessOrEqual(t, published, atCancel+1, "at most the publish in flight when the cancel committed")
	assert.Equal(t, published, s["replayed"], "the stream holds exactly what was recorded replayed")
	assert.Equal(t, 20, s["replayed"]+s["cancelled"])
	var back int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE id = ANY($1) AND status = 'quarantined'`, ids).Scan(&back))
	assert.Equal(t, s["cancelled"], back, "what was not replayed is back in quarantine")
	r, err := b.replays.Request(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusCancelled, r.Status)
}
