package replay_test

import (
	"context"
	"net"
	"strings"
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
)

// TestRevBroker9LoweredMaxPayloadKillsTheConnection: an operator lowers
// the server's max_payload (a config reload) under a running console. The
// server applies the new limit to the connections it has but tells them
// nothing: the client still believes the old limit (and so does the
// service's MaxPayload, read once at start), hands the worker's publish of
// a 20 KB item to the server, and the server answers "-ERR Maximum Payload
// Violation" and closes the connection. nats.go treats that -ERR as fatal
// (CLOSED, no reconnect), so the console's one NATS connection (ingest,
// replays, window reads) is gone for good while /readyz only says
// "degraded" ("it reconnects by itself"), and every replica that claims
// the item loses its connection the same way. Nothing was stored, yet the
// item is recorded "unknown: whether the broker stored it is unknown", and
// every later claim waits on "connection closed" for ever.
func TestRevBroker9LoweredMaxPayloadKillsTheConnection(t *testing.T) {
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
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: time.Minute})
	require.NoError(t, err)
	cfg := b.config(t)
	cfg.Windows, cfg.MaxPayload = replay.NewStreamWindows(js, time.Second), nc.MaxPayload()
	svc := replay.New(b.db.Pool, cfg)

	id := b.seedItem(t, "search.index_update", "big-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}},
		`{"p":"`+strings.Repeat("x", 20<<10)+`"}`)
	req := testfactory.Request(t, svc, oncall, []int64{id}, replay.SubmitInput{}).ID
	require.NoError(t, srv.ReloadOptions(opts(8<<10)))

	w := replay.NewWorker(svc, js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, Retry: 20 * time.Millisecond, AckTimeout: 2 * time.Second}, b.log)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	st, err := js.Stream(context.Background(), "EVENTS")
	if err == nil {
		assert.Zero(t, copiesOf(t, st, "big-1"), "the server never stored it")
	}
	// What the server did: it closed the connection ("Maximum Payload
	// Violation"), and the client never reconnects after such an error:
	// the console's one NATS connection (ingest, replays, window reads)
	// is closed for good, while /readyz says "degraded: it reconnects by
	// itself". Every later claim of the item waits on "could not read the
	// duplicate window ... connection closed", for ever.
	t.Logf("connection closed for good: %v (last error: %v)", nc.IsClosed(), nc.LastError())
	// The server's -ERR does not say which message it was about, so no
	// lost answer on a connection it closed for size proves that nothing
	// landed (TestRevFixReplay10StoredBeforeLimitLoweredIsNotRefusedForSize:
	// a message sent before the refused one may have been stored under the
	// old limit). The item stays unknown, its publish possibly landed
	// (handed_at kept, dead letter held), and says what the close was
	// about: the limit the server takes now and the message's size.
	j := b.job(t, req, id)
	assert.Equal(t, "unknown", j.State, j.Result)
	assert.Contains(t, j.Result, "max_payload (8192 bytes now")
	assert.Regexp(t, `this one is \d+ bytes with its headers`, j.Result)
	_, handed := b.handedAt(t, req, id)
	assert.NotNil(t, handed, "a publish that may have landed keeps handed_at")
	_, held := b.deadLetterStatus(t, id, req)
	assert.True(t, held, "a dead letter whose publish may have landed stays held")

	// The process whose connection was closed stops and is started again
	// (app.Run ends with the close): its new connection is told the
	// lowered limit, and its retry is judged over it: unsendable, and, a
	// publish of it maybe stored, needs reconciliation naming both sizes,
	// never sent again to close another connection.
	nc2, js2 := srv.Connect(t)
	require.EqualValues(t, 8<<10, nc2.MaxPayload())
	cfg2 := b.config(t)
	cfg2.Windows, cfg2.MaxPayload = replay.NewStreamWindows(js2, time.Second), nc2.MaxPayload()
	w2 := replay.NewWorker(replay.New(b.db.Pool, cfg2), js2, b.auth, nil,
		replay.WorkerConfig{Poll: 20 * time.Millisecond, Retry: 20 * time.Millisecond, AckTimeout: 2 * time.Second}, b.log)
	j = runUntil(t, b, w2, req, id, "unknown", "pending", "claimed")
	t.Logf("after the restart: %s: %s", j.State, j.Result)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "max_payload of 8192 bytes")
	assert.Regexp(t, `would be \d+ bytes with its headers`, j.Result)
	assert.Contains(t, j.Result, "may have landed")
	assert.False(t, nc2.IsClosed(), "the retry was sent over the limit again: %v", nc2.LastError())
	st, err = js2.Stream(ctx, "EVENTS")
	require.NoError(t, err)
	assert.Zero(t, copiesOf(t, st, "big-1"))
}
