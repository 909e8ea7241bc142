package dlq

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// lockedBuffer is a log sink safe for the ingester's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRevIngest12RaisedMaxPayloadStopsIngestAtNextSetup: DLQ_MAX_BYTES's
// floor (twice the server's max_payload, checkLimits) is checked by every
// Setup, not only at start, against the max_payload of the server the
// connection is on now. A console started with DLQ_MAX_BYTES=2MiB on
// servers taking 1 MiB messages runs; the NATS operator then raises
// max_payload to 8 MiB (a reload, a rolling restart of the cluster): the
// client reconnects and its MaxPayload is 8 MiB. The next time ingest is
// set up again (the ingest consumer deleted and made again, the stream
// made again, or every replica's pauseForPostgres after PostgreSQL was out
// of reach for cutOffAfter: all at once), Setup is refused, and again()
// (and pauseForPostgres) retry it for ever: the running replica takes no
// dead letter any more, while its DLQ stream, at 2 MiB, discards the
// oldest dead letters nobody stored. A check meant to stop a console from
// starting with a limit that loses dead letters stops a running fleet from
// ingesting at all.
//
// Fails on the current code: the dead letter published after the reset is
// never stored ("setting up ingest again failed; will retry ...
// DLQ_MAX_BYTES 2097152: must be 0 or at least 16777216 bytes").
func TestRevIngest12RaisedMaxPayloadStopsIngestAtNextSetup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := natstest.StartWithOptions(t, dir, func(o *server.Options) { o.MaxPayload = 1 << 20 })
	port := first.Addr().(*net.TCPAddr).Port
	logs := &lockedBuffer{}
	b := &bundle{db: testdb.New(t), ns: first, log: slog.New(slog.NewTextHandler(logs, nil))}
	b.nc, b.js = first.Connect(t)
	b.store = NewStore(b.db.Pool)
	cfg := IngestConfig{StreamMaxBytes: 2 << 20, HealthEvery: 500 * time.Millisecond}
	r := b.start(t, cfg, nil)
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("before")})
	b.waitRows(t, 1)

	// max_payload raised on the server: the same server (port, store)
	// started again with 8 MiB, as a rolling restart does.
	first.Shutdown()
	first.WaitForShutdown()
	natstest.StartWithOptions(t, dir, func(o *server.Options) { o.MaxPayload = 8 << 20; o.Port = port })
	t.Cleanup(r.stop) // before the server above shuts down (cleanups run last first)
	wait.Until(t, "the client reconnected and read the new max_payload", time.Minute, func() bool {
		return b.nc.IsConnected() && b.nc.MaxPayload() == 8<<20
	})

	// Ingest is set up again: here its consumer deleted (an on-call's
	// `nats consumer rm`); a PostgreSQL outage past cutOffAfter takes
	// every replica through the same Setup (pauseForPostgres).
	ctx := context.Background()
	require.NoError(t, b.js.DeleteConsumer(ctx, "DLQ", "quarantine-ingest"))
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("after")})

	err := wait.Poll(20*time.Second, 100*time.Millisecond, func() error {
		if countRows(t, b.db.Pool, "payload = 'after'::bytea") != 1 {
			return errors.New("not stored")
		}
		return nil
	})
	stored := err == nil
	assert.True(t, stored, "a dead letter published after ingest was set up again is stored: the running replica still ingests "+
		"(a stream limit below the new floor is worth a warning, not an ingest that stops for good); log:\n%s", lastLines(logs.String(), 6))
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := bytes.Split([]byte(s), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// TestRevIngest12RaisedMaxPayloadStopsIngestAfterPostgresOutage: the same
// as TestRevIngest12RaisedMaxPayloadStopsIngestAtNextSetup, reached with no
// one touching NATS after the max_payload change: PostgreSQL is out of
// reach for longer than cutOffAfter (a failover), which every replica
// sees at once. Each one cut off waits for PostgreSQL, then sets ingest up
// again (pauseForPostgres: Setup, then consume); Setup is refused on the
// DLQ_MAX_BYTES floor, retried for ever, and the replica never consumes
// again. A PostgreSQL failover ends ingest on the whole fleet.
//
// Fails on the current code: the dead letter published during the outage
// is never stored.
func TestRevIngest12RaisedMaxPayloadStopsIngestAfterPostgresOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	first := natstest.StartWithOptions(t, dir, func(o *server.Options) { o.MaxPayload = 1 << 20 })
	port := first.Addr().(*net.TCPAddr).Port
	logs := &lockedBuffer{}
	b := &bundle{db: testdb.New(t), ns: first, log: slog.New(slog.NewTextHandler(logs, nil))}
	b.nc, b.js = first.Connect(t)

	down := b.storeBehindARoute(t, "revingest12-replica")
	r := b.start(t, IngestConfig{StreamMaxBytes: 2 << 20}, nil)
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("before")})
	b.waitRows(t, 1)

	first.Shutdown()
	first.WaitForShutdown()
	natstest.StartWithOptions(t, dir, func(o *server.Options) { o.MaxPayload = 8 << 20; o.Port = port })
	t.Cleanup(r.stop) // before the server above shuts down (cleanups run last first)
	wait.Until(t, "the client reconnected and read the new max_payload", time.Minute, func() bool {
		return b.nc.IsConnected() && b.nc.MaxPayload() == 8<<20
	})

	// PostgreSQL out of reach past cutOffAfter, then back.
	down.Store(true)
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'revingest12-replica'")
	require.NoError(t, err)
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("during")})
	wait.Until(t, "the replica cut off from PostgreSQL", time.Minute, r.cutOff.Load)
	down.Store(false)
	wait.Until(t, "PostgreSQL answers the replica again", time.Minute, func() bool { return !r.cutOff.Load() })

	err = wait.Poll(20*time.Second, 100*time.Millisecond, func() error {
		if countRows(t, b.db.Pool, "payload = 'during'::bytea") != 1 {
			return errors.New("not stored")
		}
		return nil
	})
	assert.NoError(t, err, "the dead letter published during the outage is stored once PostgreSQL answers; log:\n%s", lastLines(logs.String(), 6))
}
