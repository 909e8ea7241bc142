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
	j := b.job(t, req, id)
	assert.NotEqual(t, "unknown", j.State, "a publish the server refused for its size is taken for one that may have landed: %s", j.Result)
	assert.NotContains(t, j.Result, "whether the broker stored it is unknown")
	// Refused for its size (never stored), the item is blocked, naming the
	// limit: it is not claimed again to close another connection, nor left
	// waiting on this one.
	assert.Equal(t, "blocked", j.State, j.Result)
	assert.Contains(t, j.Result, "max_payload of 8192 bytes")
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	j = b.job(t, req, id)
	assert.Equal(t, 1, j.Attempts, "claimed again: %s", j.Result)
	assert.NotContains(t, j.Result, "connection closed", "the item waits for ever on a connection the client closed for good")
}
