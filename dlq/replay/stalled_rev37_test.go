package replay_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev37StalledConnectionsPublishIsDroppedBeforeARetry: worker A's
// first publish goes out on a connection whose path to the server then
// stalls (the bytes kept, as a kernel keeps them to send again; the
// client sees it connected for minutes). Its PubAck does not come, and
// neither does the answer to the ping A sends after it, so A resets the
// connection before it records the job unknown, and the console's
// connections are dialed so that a reset drops what was not delivered.
// Worker B, on another connection, then retries inside the window and
// the broker stores the message. When the path heals after the broker
// has forgotten B's id, nothing of A's publish arrives: the message is
// stored once. Before, A recorded the job unknown without asking, B's
// retry was stored, and A's publish was stored again when the path
// healed: two effects of one approved item, the job shown replayed.
func TestRev37StalledConnectionsPublishIsDroppedBeforeARetry(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID = "rev37-stalled"
	st := stalledFirstAttempt(t, b, msgID)
	path, req, id, wB, ncA, jsA := st.path, st.req, st.id, st.wB, st.ncA, st.jsA
	j := b.job(t, req.ID, id)
	require.Equal(t, "unknown", j.State, j.Result)
	require.Contains(t, j.Result, "was reset")
	require.Positive(t, path.Dropped(), "the reset dropped the publish the stalled path held")
	require.Equal(t, 0, b.publishedAs(t, msgID))

	j = b.settled(t, wB, req.ID, id)
	require.Equal(t, "replayed", j.State, j.Result)
	require.Equal(t, 1, b.publishedAs(t, msgID))

	// The broker forgets B's id (the window lowered; a canary published
	// after B's retry, forgotten, says the ids before it are), and the
	// path heals: whatever A's connection still held would now be stored
	// as a new message.
	canary := func() *jetstream.PubAck {
		ack, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: "app.acme.rev37.canary", Data: []byte("{}")}, jetstream.WithMsgID("rev37-canary"))
		require.NoError(t, err)
		return ack
	}
	canary()
	cfg := b.target.CachedInfo().Config
	cfg.Duplicates = 100 * time.Millisecond
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	wait.Until(t, "the broker forgets the ids of B's time", time.Minute, func() bool { return !canary().Duplicate })
	path.Release()
	// Everything the path held is delivered or was dropped; nothing of a
	// connection A gave up reached the server after it closed. A's
	// connection now (the same one, had it not been reset) has the server
	// read all it wrote (a ping answered), and a marker published after it
	// is stored once the stream took everything before it.
	wait.Until(t, "the healed path delivers what it held", time.Minute, func() bool {
		return path.Settled() && ncA.IsConnected() && ncA.FlushTimeout(time.Second) == nil
	})
	require.Zero(t, path.Late(), "what the stalled path held reached the server after A closed its connection")
	_, err = jsA.PublishMsg(ctx, &nats.Msg{Subject: "app.acme.rev37.marker", Data: []byte("{}")}, jetstream.WithMsgID("rev37-marker"))
	require.NoError(t, err)
	require.Equal(t, 1, b.publishedAs(t, msgID), "one approved item stored twice")
}

// TestRev37WindowLoweredBeforeARetryLeaves: a retry after a lost PubAck
// is judged with the target's window read afresh (10 s, covering the
// first publish); an operator then lowers the window to 100 ms before the
// retry leaves, and the server forgets the first publish's id at once.
// The window is read again as the retry leaves: it no longer covers the
// first publish, so nothing is sent and a person settles the item.
// Before, the retry went on the judge's 10 s and was stored a second
// time.
func TestRev37WindowLoweredBeforeARetryLeaves(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	cfg := b.target.CachedInfo().Config
	cfg.Duplicates = 10 * time.Second
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	const msgID = "rev37-lowered"
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	req, id := b.firstPublishLost(t, w, msgID)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, req)
	require.NoError(t, err)
	w.AfterJudge(func() {
		lowered := cfg
		lowered.Duplicates = 100 * time.Millisecond
		_, err := b.js.UpdateStream(ctx, lowered)
		require.NoError(t, err)
	})
	j := b.settled(t, w, req, id)
	require.Equal(t, "needs_reconciliation", j.State, j.Result)
	require.Contains(t, j.Result, "no longer covers it")
	require.Equal(t, 1, b.publishedAs(t, msgID), "the retry was sent after the window forgot the first publish")
}

// TestRev37MappingInsideTheStreamIsNotReplayed: the account maps the
// original subject to another subject the same stream takes. The
// replays, sent expecting that stream, are stored under the mapped
// subject, where the original subject's consumers never read them, with
// ordinary PubAcks. They need a person, each of them (the first read back
// tells for the claim's others of the subject), never shown replayed.
func TestRev37MappingInsideTheStreamIsNotReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	ids := []int64{
		b.seedItem(t, "search.index_update", "rev37-mapped-1", nil, "{}"),
		b.seedItem(t, "search.index_update", "rev37-mapped-2", nil, "{}"),
	}
	req := b.request(t, ids, replay.SubmitInput{})
	var subject string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT DISTINCT subject FROM replay_items WHERE request_id = $1`, req.ID).Scan(&subject))
	require.NoError(t, b.ns.GlobalAccount().AddMapping(subject, "app.acme.elsewhere"))
	now := time.Now().Add(time.Hour) // past the originals' window
	b.now.Store(&now)
	w := b.worker(t, replay.WorkerConfig{})
	wait.Until(t, "both jobs judged", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		for _, id := range ids {
			switch b.job(t, req.ID, id).State {
			case "pending", "claimed", "deferred", "unknown":
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		j := b.job(t, req.ID, id)
		require.Equal(t, "needs_reconciliation", j.State, j.Result)
		require.Contains(t, j.Result, `under subject "app.acme.elsewhere"`)
	}
	require.Len(t, onSubjectMsgs(t, b.target, "app.acme.elsewhere"), 2, "the broker stored both under the mapped subject")
}

// stalledFirstAttempt seeds one item of msgID, requests it, and has
// worker A publish it on a connection whose path to the server is held
// (natstest.StallProxy, dialed as the console dials: app.NATSResetOnClose)
// under a duplicate window of a minute: its PubAck and the ping after it
// go unanswered. It returns the path, the request, the dead letter and
// worker B, on the bundle's own connection, to retry it, with A's
// connection.
type stalled struct {
	path *natstest.StallProxy
	req  replay.Request
	id   int64
	wB   *replay.Worker
	ncA  *nats.Conn
	jsA  jetstream.JetStream
}

func stalledFirstAttempt(t *testing.T, b *replayBundle, msgID string) stalled {
	t.Helper()
	ctx := context.Background()
	cfg := b.target.CachedInfo().Config
	cfg.Duplicates = time.Minute
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	path := b.ns.Stall(t)
	ncA, err := nats.Connect(path.URL(), nats.MaxReconnects(-1), nats.ReconnectBufSize(-1), nats.Timeout(30*time.Second), app.NATSResetOnClose())
	require.NoError(t, err)
	t.Cleanup(ncA.Close)
	jsA, err := jetstream.New(ncA, jetstream.WithDefaultTimeout(30*time.Second))
	require.NoError(t, err)

	id := b.seedItem(t, "search.index_update", msgID, nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	wA := b.workerOn(t, jsA, replay.WorkerConfig{Owner: "A", AckTimeout: 300 * time.Millisecond, Retry: 20 * time.Millisecond})
	wB := b.worker(t, replay.WorkerConfig{Owner: "B", Retry: 20 * time.Millisecond})

	path.Hold()
	_, err = wA.RunOnce(ctx)
	require.NoError(t, err)
	return stalled{path: path, req: req, id: id, wB: wB, ncA: ncA, jsA: jsA}
}

// stopDuringFresh is a window reader that, once armed, runs hook as it
// is asked afresh for the second time: after a claim's judge, a retry's
// window is read before the owning service would be asked and again on
// its way out.
type stopDuringFresh struct {
	replay.WindowReader
	armed atomic.Bool
	reads atomic.Int32
	hook  func()
}

func (s *stopDuringFresh) Fresh(ctx context.Context, subject string) replaypolicy.Window {
	if s.armed.Load() && s.reads.Add(1) == 2 {
		s.hook()
	}
	return s.WindowReader.Fresh(ctx, subject)
}

// TestRev37StopDuringARetrysWindowReadHoldsIt: an approver's emergency
// stop commits while a retry's window is read afresh on its way out (a
// JetStream round trip, up to seconds). The retry is not handed to NATS:
// the status is read after that read, not only before it, and the item
// waits for a person (its first publish may have landed). Before, the
// status was read before the window, and the retry left after the stop.
func TestRev37StopDuringARetrysWindowReadHoldsIt(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	cfg := b.config(t)
	var reqID atomic.Int64
	var stopped, leftAfterStop atomic.Bool
	windows := &stopDuringFresh{WindowReader: cfg.Windows}
	windows.hook = func() {
		require.NoError(t, b.replays.Stop(ctx, reqID.Load(), approver1, replay.StopInput{Reason: "incident", Typed: replaypolicy.StopPhrase}, quarantine.RequestMeta{}))
		stopped.Store(true)
	}
	cfg.Windows = windows
	b.replays = replay.New(b.db.Pool, cfg)
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	req, id := b.firstPublishLost(t, w, "rev37-stop-during-fresh")
	reqID.Store(req)
	_, err := b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, req)
	require.NoError(t, err)
	w.AfterJudge(func() { windows.armed.Store(true) })
	w.Leaving(func(int64) {
		if stopped.Load() {
			leftAfterStop.Store(true)
		}
	})
	wait.Until(t, "the retry judged", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return stopped.Load() && b.job(t, req, id).State != "unknown"
	})
	require.False(t, leftAfterStop.Load(), "the retry was handed to NATS after the emergency stop committed")
	j := b.job(t, req, id)
	require.Equal(t, "needs_reconciliation", j.State, j.Result)
}
