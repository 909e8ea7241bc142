package replay_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// Faults of a replay's execution: the broker goes away and comes back, a
// retry is refused, a worker pauses past its lease, a target stream's
// dedupe does not survive a restart, a worker stops in the middle of a
// reservation. Each asserts what the broker received or stores.

// ownNATS is a NATS server of the test's own (so that the test can stop
// and start it again on the same port and store), a connection to it with
// the client's default reconnect buffer, and a replay service and worker
// on that connection.
type ownNATS struct {
	srv  *natstest.Server
	port int
	dir  string
	nc   *nats.Conn
	js   jetstream.JetStream
	svc  *replay.Service
}

func startOwnNATS(t *testing.T, b *replayBundle) *ownNATS {
	t.Helper()
	o := &ownNATS{dir: t.TempDir()}
	o.srv = natstest.StartWithStore(t, o.dir)
	o.port = o.srv.Addr().(*net.TCPAddr).Port
	o.nc, o.js = o.srv.Connect(t)
	cfg := b.config(t)
	cfg.Windows = replay.NewStreamWindows(o.js, replay.DefaultWindowTTL) // the console's: a window read is kept 30 s
	o.svc = replay.New(b.db.Pool, cfg)
	return o
}

func (o *ownNATS) worker(b *replayBundle, cfg replay.WorkerConfig) *replay.Worker {
	if cfg.Poll == 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	return replay.NewWorker(o.svc, o.js, b.auth, nil, cfg, b.log)
}

// stop shuts the server down and waits until the client knows.
func (o *ownNATS) stop(t *testing.T) {
	t.Helper()
	o.srv.Shutdown()
	o.srv.WaitForShutdown()
	wait.Until(t, "the client to see NATS gone", time.Minute, func() bool { return !o.nc.IsConnected() })
}

// start runs the server again on its port and store, and waits until the
// client is connected again.
func (o *ownNATS) start(t *testing.T) {
	t.Helper()
	o.srv = natstest.StartWithOptions(t, o.dir, func(opts *server.Options) { opts.Port = o.port })
	wait.Until(t, "the client to reconnect", time.Minute, func() bool { return o.nc.IsConnected() })
}

// copiesOf counts the messages of stream s with message id msgID.
func copiesOf(t *testing.T, s jetstream.Stream, msgID string) int {
	t.Helper()
	n := 0
	for _, m := range streamMsgs(t, s) {
		if m.Header.Get(dlq.HeaderNatsMsgID) == msgID {
			n++
		}
	}
	return n
}

// runUntil runs w's claims until the job of dead letter id in request
// reqID is no longer in state from, and returns it.
func runUntil(t *testing.T, b *replayBundle, w *replay.Worker, reqID, id int64, from ...string) jobRow {
	t.Helper()
	var j jobRow
	wait.Until(t, fmt.Sprintf("the job to leave %v", from), 2*time.Minute, func() bool {
		_, err := w.RunOnce(context.Background())
		require.NoError(t, err)
		j = b.job(t, reqID, id)
		for _, s := range from {
			if j.State == s {
				return false
			}
		}
		return true
	})
	return j
}

// TestRetryWhileNATSIsDownIsNotBuffered loses the PubAck of a publish the
// broker stored, then stops NATS for longer than the target's duplicate
// window. The retries while the client reconnects are not handed to the
// client (which would keep them in its reconnect buffer and send them when
// NATS is back, after the window: stored again); past the window the job
// needs reconciliation, and once NATS is back the stream holds the message
// once.
func TestRetryWhileNATSIsDownIsNotBuffered(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	o := startOwnNATS(t, b)
	const window = 3 * time.Second
	_, err := o.js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: window, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	id := b.seedItem(t, "search.index_update", "rb-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := o.worker(b, replay.WorkerConfig{Retry: 20 * time.Millisecond, AckTimeout: time.Second})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "unknown", b.job(t, req.ID, id).State)

	o.stop(t)
	j := runUntil(t, b, w, req.ID, id, "unknown", "pending")
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Greater(t, j.Attempts, 2, "retried while NATS was down")

	o.start(t)
	// A message published after the reconnect is stored after anything
	// the client kept for it: once it is acknowledged, what was kept is in.
	wait.Until(t, "a marker to be stored", time.Minute, func() bool {
		_, err := o.js.Publish(ctx, "events.acme.marker", []byte("m"))
		return err == nil
	})
	st, err := o.js.Stream(ctx, "EVENTS")
	require.NoError(t, err)
	assert.Equal(t, 1, copiesOf(t, st, "rb-1"), "the target stores the replay once")
	assert.Equal(t, "needs_reconciliation", b.job(t, req.ID, id).State)
}

// TestRetryRefusedAfterLostAckNeedsReconciliation loses the PubAck of a
// publish the broker stored; the retry is refused by the broker (its
// max_msg_size lowered meanwhile). The refusal stored nothing, but the
// first publish may have landed: the job needs reconciliation (not
// blocked, which would let go of the dead letter for a new request to
// replay again), and the stream holds the message once.
func TestRetryRefusedAfterLostAckNeedsReconciliation(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	const window = 3 * time.Second
	ev := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: window})
	id := b.seedItem(t, "analytics.event", "ae-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.analytics.event"}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1)
	_, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "unknown", b.job(t, req.ID, id).State)
	require.Equal(t, 1, copiesOf(t, ev, "ae-1"), "the first publish was stored")

	_, err = b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: window, MaxMsgSize: 64})
	require.NoError(t, err)
	j := runUntil(t, b, w, req.ID, id, "unknown")
	assert.Equal(t, "needs_reconciliation", j.State)
	assert.Contains(t, j.Result, "message size exceeds maximum allowed")
	assert.Contains(t, j.Result, "may have landed")
	d, err := b.store.Get(ctx, id)
	require.NoError(t, err)
	assert.NotEqual(t, dlq.StatusReplayFailed, d.Status, "the request keeps the dead letter")
	assert.Equal(t, 1, copiesOf(t, ev, "ae-1"))
}

// TestPausedWorkerDoesNotPublishAfterTakeover pauses a worker between its
// publish gate and the publish, past the part of its lease it publishes
// in; meanwhile its lease runs out and another worker takes the job over
// and replays it. The paused worker then publishes nothing: the subject
// receives one publish.
func TestPausedWorkerDoesNotPublishAfterTakeover(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "pw-1", nil, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	sub, err := b.nc.SubscribeSync("app.>") // every publish, the broker's duplicates too
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())

	w1 := b.worker(t, replay.WorkerConfig{Lease: 6 * time.Second})
	var paused atomic.Bool
	w1.BeforeSend(func(_ int64, publishBy time.Time) {
		if paused.Swap(true) {
			return
		}
		// On the worker's goroutine: assert, not require.
		b.leaseRunsOut(t, req.ID)
		w2 := b.worker(t, replay.WorkerConfig{})
		_, err := w2.RunOnce(ctx)
		assert.NoError(t, err)
		assert.Equal(t, "replayed", b.job(t, req.ID, id).State, "the other worker took it over")
		time.Sleep(time.Until(publishBy)) // the pause is the scenario: past the claim's publishing
	})
	_, err = w1.RunOnce(ctx)
	require.NoError(t, err)
	require.True(t, paused.Load(), "the first worker reached its publish")

	require.NoError(t, b.nc.Flush())
	n, _, err := sub.Pending()
	require.NoError(t, err)
	assert.Equal(t, 1, n, "publishes of the job")
	assert.Equal(t, "replayed", b.job(t, req.ID, id).State)
	assert.Equal(t, 1, b.publishedAs(t, "pw-1"))
}

// TestWorkQueueTargetUnknownOutcomeNeedsReconciliation loses the PubAck of
// a publish to a work-queue stream; a consumer takes the message (the
// stream removes it) and NATS restarts, forgetting the id: a retry inside
// the duplicate window would be stored again. The job needs
// reconciliation instead, and nothing more is stored.
func TestWorkQueueTargetUnknownOutcomeNeedsReconciliation(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	o := startOwnNATS(t, b)
	st, err := o.js.CreateStream(ctx, jetstream.StreamConfig{Name: "WORK", Subjects: []string{"events.>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	require.NoError(t, err)
	c, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "applier", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	id := b.seedItem(t, "search.index_update", "wq-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := o.worker(b, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)

	batch, err := c.Fetch(1, jetstream.FetchMaxWait(30*time.Second))
	require.NoError(t, err)
	applied := 0
	for m := range batch.Messages() {
		require.Equal(t, "wq-1", m.Headers().Get(dlq.HeaderNatsMsgID))
		require.NoError(t, m.DoubleAck(ctx))
		applied++
	}
	require.Equal(t, 1, applied, "the consumer applied the replay")
	o.stop(t)
	o.start(t)

	j := runUntil(t, b, w, req.ID, id, "unknown", "pending")
	assert.Equal(t, "needs_reconciliation", j.State)
	assert.Contains(t, j.Result, "workqueue retention")
	st, err = o.js.Stream(ctx, "WORK")
	require.NoError(t, err)
	assert.Equal(t, 0, copiesOf(t, st, "wq-1"), "nothing stored again after the consumer took it")
}

// TestStopMidReservationUnmarksUnsentJobs stops a worker in the middle of
// a reservation of several jobs (500/s: ten jobs a gate). The jobs it
// published are replayed (their PubAcks are read although it stops), and
// no job it never sent stays marked as attempted (a publish may have
// landed).
func TestStopMidReservationUnmarksUnsentJobs(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	var ids []int64
	for i := range 30 {
		ids = append(ids, b.seedItem(t, "search.index_update", fmt.Sprintf("mc-%d", i), nil, "{}"))
	}
	req := b.request(t, ids, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{})
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sends atomic.Int32
	w.BeforeSend(func(int64, time.Time) {
		if sends.Add(1) == 3 {
			cancel() // a deploy: the worker stops in the middle of the reservation
		}
	})
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(rctx) })
	wg.Wait()

	published := b.published(t)
	require.NotEmpty(t, published)
	rows, err := b.db.Pool.Query(ctx, `SELECT i.msg_id, j.state, j.first_attempt_at IS NOT NULL FROM replay_jobs j
        JOIN replay_items i ON i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id WHERE j.request_id = $1`, req.ID)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var msgID, state string
		var marked bool
		require.NoError(t, rows.Scan(&msgID, &state, &marked))
		if _, ok := published[msgID]; ok {
			assert.Equal(t, "replayed", state, msgID)
			continue
		}
		assert.False(t, marked, "%s was never sent but is marked attempted (%s)", msgID, state)
		assert.Equal(t, "pending", state, msgID)
	}
	require.NoError(t, rows.Err())
}

// TestRetryWindowJudgedOnTheDatabaseClock loses the PubAck of a publish
// the broker stored, on a console whose clock lags the database's by 5 s.
// The first attempt's time is the database's (the publish gate's), so the
// retry's turn, once the window has passed on that clock, is judged on it
// too: the job needs reconciliation and the stream holds the message once
// (judged on the console's clock it would still be inside the window, and
// the broker would store it again).
func TestRetryWindowJudgedOnTheDatabaseClock(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	const window = 3 * time.Second
	ev := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: window})
	cfg := b.config(t)
	cfg.Now = func() time.Time { return time.Now().Add(-5 * time.Second) } // the console host's clock lags the database's
	svc := replay.New(b.db.Pool, cfg)
	id := b.seedItem(t, "search.index_update", "sk-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := replay.NewWorker(svc, b.js, b.auth, nil, replay.WorkerConfig{Retry: 20 * time.Millisecond, AckTimeout: time.Minute, Poll: 20 * time.Millisecond}, b.log)
	loseAcks(w, 1)
	_, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "unknown", b.job(t, req.ID, id).State)

	// The retry's turn comes late (backoff, a busy worker): after the
	// window, on the database's clock.
	wait.Until(t, "the window to pass on the database's clock", time.Minute, func() bool {
		var past bool
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT clock_timestamp() > first_attempt_at + make_interval(secs => $3)
            FROM replay_jobs WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, id, window.Seconds()).Scan(&past))
		return past
	})
	j := runUntil(t, b, w, req.ID, id, "unknown")
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Equal(t, 1, copiesOf(t, ev, "sk-1"))
}

// TestAnsweringStreamUnansweredJudgedByTheList: a first attempt a limits
// stream acknowledged as new, whose stream NATS cannot be asked about
// after the answer (the server went down right after its PubAck), is
// judged by the claim's list of streams (limits retention: it stored
// what it acknowledged), replayed, not handed to a person: on every NATS
// restart during a bulk replay, every first attempt of the claim in
// flight went to needs_reconciliation (TestBulkReplaySurvivesNATSRestart).
// A stream the server says is gone still lets a person decide
// (TestAnsweringStreamUnreadableNeedsReconciliation).
func TestAnsweringStreamUnansweredJudgedByTheList(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	o := startOwnNATS(t, b)
	_, err := o.js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	id := b.seedItem(t, "search.index_update", "gone-after-ack", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := o.worker(b, replay.WorkerConfig{AckTimeout: time.Minute})
	w.OnAck(func(_ int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		o.stop(t)
		return a, err
	})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)

	j := b.job(t, req.ID, id)
	assert.Equal(t, "replayed", j.State, j.Result)
	o.start(t)
	st, err := o.js.Stream(ctx, "EVENTS")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), st.CachedInfo().State.Msgs, "the broker stored the replay it acknowledged")
}
