package replay_test

import (
	"context"
	"net"
	"strings"
	"sync"
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
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevFixReplay10StoredBeforeLimitLoweredIsNotRefusedForSize: one
// claim publishes two 20 KB items A and B under a server max_payload of
// 64 KB. The broker stores A; then an operator lowers max_payload to 8 KB
// (a reload), and B, sent next on the same connection, is answered
// "-ERR Maximum Payload Violation" and the connection is closed for good,
// losing A's PubAck with it (the close came before it was read).
//
// The worker's serverLimit judges every lost answer on a connection closed
// for size by the limit the server announces NOW: A (20 KB > 8 KB) is
// judged "refused for its size, never stored" and blocked, and
// job.nothingLanded clears its handed_at. But the broker stored A: it was
// processed under the old limit. The console reports a replay that landed
// as never stored (invariant 13), lets go of the dead letter, and a new
// request for it (the on-call "edits the payload down, or raises
// max_payload and replays it again", as the result tells them) publishes
// it a second time once the window has passed (invariant 4): two effects
// of one approved intent.
//
// Expected: only the message the -ERR was for is known refused; a lost
// answer of a message sent before it may have been stored under the
// limit the server held then (the limit read now says nothing of that), so
// A stays unknown (or needs reconciliation), handed_at kept, its dead
// letter held.
func TestRevFixReplay10StoredBeforeLimitLoweredIsNotRefusedForSize(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	dir := t.TempDir()
	opts := func(max int32) *server.Options {
		return &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true, MaxPayload: max}
	}
	srv := natstest.StartWithOptions(t, dir, func(o *server.Options) { *o = *opts(64 << 10) })
	nc, js := srv.Connect(t)
	events, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: 2 * time.Second})
	require.NoError(t, err)
	cfg := b.config(t)
	cfg.Windows, cfg.MaxPayload = replay.NewStreamWindows(js, time.Second), nc.MaxPayload()
	svc := replay.New(b.db.Pool, cfg)

	big := `{"p":"` + strings.Repeat("x", 20<<10) + `"}`
	idA := b.seedItem(t, "search.index_update", "big-A", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, big)
	idB := b.seedItem(t, "search.index_update", "big-B", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, big)
	req := testfactory.Request(t, svc, oncall, []int64{idA, idB}, replay.SubmitInput{}).ID

	w := replay.NewWorker(svc, js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, Retry: 20 * time.Millisecond, AckTimeout: 5 * time.Second}, b.log)
	var mu sync.Mutex
	var first int64
	sends := 0
	seen := map[int64]bool{}
	w.BeforeSend(func(jobID int64, _ time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if seen[jobID] {
			// The wait and the reload below made the job late for its
			// slot: it reserved a fresh one and comes here again.
			return
		}
		seen[jobID] = true
		sends++
		if sends == 1 {
			first = jobID
			return
		}
		// The first message is stored under the old limit; then the
		// operator lowers it, before the second is sent.
		wait.Until(t, "the first publish to be stored", time.Minute, func() bool {
			info, err := events.Info(context.Background())
			return err == nil && info.State.Msgs == 1
		})
		require.NoError(t, srv.ReloadOptions(opts(8<<10)))
	})
	w.OnAck(func(jobID int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		mu.Lock()
		isFirst := jobID == first
		mu.Unlock()
		if !isFirst {
			return a, err
		}
		// The server closed the connection for the second message before
		// the first one's PubAck was read: that answer is lost.
		wait.Until(t, "the server to close the connection", time.Minute, func() bool { return nc.IsClosed() })
		return nil, context.DeadlineExceeded
	})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, sends, "both items were sent in one claim")
	require.True(t, nc.IsClosed(), "the server closed the connection for the second message (last error: %v)", nc.LastError())

	st, err := srvStream(t, srv, "EVENTS")
	require.NoError(t, err)
	require.Equal(t, 1, copiesOf(t, st, "big-A"), "the broker stored A before the limit was lowered")
	require.Zero(t, copiesOf(t, st, "big-B"), "B was the message refused")

	// Which item went first is the worker's order: A is the one stored.
	aID := idA
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT dead_letter_id FROM replay_jobs WHERE id = $1`, first).Scan(&aID))
	require.Equal(t, idA, aID, "A was sent first")
	jobA, jobB := b.job(t, req, idA), b.job(t, req, idB)
	t.Logf("stored item's job: %s: %s", jobA.State, jobA.Result)
	t.Logf("refused item's job: %s: %s", jobB.State, jobB.Result)
	// The server's -ERR does not say which message it was about, so the
	// one it refused is not known either: unknown, as every lost answer
	// on the closed connection (the lead's decision).
	require.Equal(t, "unknown", jobB.State, "the message the server refused stays unknown")
	assert.NotEqual(t, "blocked", jobA.State, "a publish the broker STORED is reported refused for its size, never stored: %s", jobA.Result)
	assert.NotContains(t, jobA.Result, "refused it for its size", "the item says the broker did not store what it stored")
	_, handed := b.handedAt(t, req, idA)
	assert.NotNil(t, handed, "handed_at of a job whose publish landed was cleared (nothingLanded): it is no one's replay")
	status, held := b.deadLetterStatus(t, idA, req)
	assert.True(t, held, "the dead letter whose replay landed is let go (status %s): a new request may replay it again", status)
	if held {
		return
	}

	// The on-call does as the item says: max_payload raised again, A
	// replayed again. Its first replay landed; this one lands too.
	require.NoError(t, srv.ReloadOptions(opts(64<<10)))
	_, js2 := srv.Connect(t)
	cfg2 := b.config(t)
	cfg2.Windows, cfg2.MaxPayload = replay.NewStreamWindows(js2, time.Second), 64<<10
	svc2 := replay.New(b.db.Pool, cfg2)
	req2 := testfactory.Request(t, svc2, oncall, []int64{idA}, replay.SubmitInput{}).ID
	w2 := replay.NewWorker(svc2, js2, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, Retry: 20 * time.Millisecond, AckTimeout: 30 * time.Second}, b.log)
	var j2 jobRow
	wait.Until(t, "the second request's job to end", 2*time.Minute, func() bool {
		_, err := w2.RunOnce(ctx)
		require.NoError(t, err)
		j2 = b.job(t, req2, idA)
		return j2.State != "pending" && j2.State != "deferred" && j2.State != "claimed" && j2.State != "unknown"
	})
	t.Logf("second request's job: %s: %s", j2.State, j2.Result)
	assert.Equal(t, 1, copiesOf(t, st, "big-A"), "one approved intent, two effects: dead letter A stored twice")
}

// srvStream reads stream name on a fresh connection to srv (the
// console's was closed for good).
func srvStream(t *testing.T, srv *natstest.Server, name string) (jetstream.Stream, error) {
	t.Helper()
	_, js := srv.Connect(t)
	return js.Stream(context.Background(), name)
}
