package dlq

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest21BigOriginalCutsTheConsoleOffNATS (review 21b): the
// original of every captured give-up is read through JetStream's JSON API
// (fetchOriginal, readStored: STREAM.MSG.GET), whose answer carries the
// payload in base64, a third larger than the message. NATS takes payloads
// up to 64 MiB (max_payload), and a memory-storage stream (a service's
// work stream, say) stores them whole; a server queues at most
// max_pending (64 MiB by default) for one client and closes a client it
// would have to queue more for, as a slow consumer. So one message of
// 50 MB that a consumer of a watched stream gives up on makes an answer of
// some 67 MB, and the server closes the CONSOLE's connection each time the
// console reads it: everything in flight on that connection (other dead
// letters' acks and pulls, replay publishes and their PubAcks) is cut
// with it, at every delivery of the advisory (maxHeaderRereads), and then
// at every sweep that reads it again; in the end the row is stored without
// the original's payload and headers, under tenant unknown, flagged
// original_gone ("was gone from its stream", which it was not) and
// original_unreadable, and acked: acme's on-call never sees its give-up,
// and whoever reads tenant unknown does. The same read serves a DLQ message whose header
// block the client did not read whole (on a memory DLQ stream, which the
// console reports but does not remake). The direct get API
// ($JS.API.DIRECT.GET, the message as a NATS message, no base64), or a
// read whose answer the console bounds, would not cut the connection.
func TestRevIngest21BigOriginalCutsTheConsoleOffNATS(t *testing.T) {
	t.Parallel()
	ns := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 64 << 20 })
	b := &bundle{db: testdb.New(t), ns: ns}
	b.nc, b.js = ns.Connect(t)
	b.store = NewStore(b.db.Pool)
	var dropped atomic.Int64
	b.nc.SetDisconnectErrHandler(func(_ *nats.Conn, _ error) { dropped.Add(1) })
	ctx := context.Background()

	// The service's side: its own connection, a memory stream, a consumer.
	_, svc := ns.Connect(t)
	orders := ordersStream
	orders.Storage = jetstream.MemoryStorage
	_, err := svc.CreateStream(ctx, orders)
	require.NoError(t, err)
	ws, err := ParseWatchStreams(orders.Name)
	require.NoError(t, err)
	b.start(t, IngestConfig{Watch: ws}, nil)

	payload := bytes.Repeat([]byte("x"), 50<<20)
	_, err = svc.Publish(ctx, "app.acme.orders.export", payload)
	require.NoError(t, err)
	cons, err := svc.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "exporter", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	msg, err := cons.Next(jetstream.FetchMaxWait(30 * time.Second))
	require.NoError(t, err)
	require.NoError(t, msg.TermWithReason("export too large"))

	wait.Until(t, "the give-up stored", 3*time.Minute, func() bool {
		var n int
		err := b.db.Pool.QueryRow(ctx, "SELECT count(*) FROM dead_letters WHERE source_consumer = 'exporter'").Scan(&n)
		return err == nil && n == 1
	})
	d, err := b.store.BySource(ctx, "ORDERS", 1, "exporter")
	require.NoError(t, err)
	assert.Zero(t, dropped.Load(), "the NATS server closed the console's connection %d times while it read the original (server's slow consumers: %d; flags %v)",
		dropped.Load(), ns.NumSlowConsumers(), d.Flags)
	assert.NotContains(t, d.Flags, "original_unreadable", "stored without the original the stream holds: %v", d.MalformedReasons)
	assert.Equal(t, "acme", d.Tenant, "acme's give-up filed under another tenant (flags %v)", d.Flags)
	assert.Len(t, d.Payload, 50<<20)
}
