package dlq

import (
	"context"
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

// bigPayloadBundle is setup on a NATS server whose max_payload is over
// storedJSONMax (8 MiB): readStored then reads an original as a NATS
// message (readMsg), by a consumer of its own (readByConsumer) on a
// stream without direct gets, as jetstream.CreateStream makes them.
func bigPayloadBundle(t *testing.T) *bundle {
	t.Helper()
	ns := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 16 << 20 })
	b := &bundle{db: testdb.New(t), ns: ns}
	b.nc, b.js = ns.Connect(t)
	b.store = NewStore(b.db.Pool)
	return b
}

// TestRevIngest23WorkQueueGiveUpStoredWithoutItsOriginal (review 23b): on
// a NATS server with max_payload over 8 MiB, readStored reads a watched
// stream's message by making an unfiltered AckNone consumer on that
// stream (readByConsumer). A work-queue stream refuses every pull
// consumer without explicit acks (err_code 10084; and any unfiltered one
// while it has a consumer), so the original of every give-up of a
// work-queue stream is "unreadable": after maxHeaderRereads deliveries of the
// advisory it is stored without payload and headers, under tenant
// unknown, flagged original_unreadable, although the message is in its
// stream and STREAM.MSG.GET (which readJSON uses) reads it at once.
// acme's on-call never sees its give-up; whoever reads tenant unknown
// does, without the payload.
func TestRevIngest23WorkQueueGiveUpStoredWithoutItsOriginal(t *testing.T) {
	t.Parallel()
	b := bigPayloadBundle(t)
	ctx := context.Background()
	jobsStream := b.createStream(t, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"app.*.jobs.>"}, Retention: jetstream.WorkQueuePolicy})
	ws, err := ParseWatchStreams("JOBS")
	require.NoError(t, err)
	b.start(t, IngestConfig{Watch: ws}, nil)

	publish(t, b.js, &nats.Msg{Subject: "app.acme.jobs.rebuild", Data: []byte(`{"job":1}`), Header: nats.Header{"Nats-Msg-Id": {"job-1"}}})
	jobs, err := b.js.CreateConsumer(ctx, "JOBS", jetstream.ConsumerConfig{Durable: "jobber", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 3})
	require.NoError(t, err)
	failingWorker(t, jobs, 1, false) // nak'd three times: MAX_DELIVERIES; the message stays in the work queue

	b.waitRows(t, 1)
	d, err := b.store.BySource(ctx, "JOBS", 1, "jobber")
	require.NoError(t, err)
	// The original is in its stream all along, and JetStream's JSON API
	// (STREAM.MSG.GET, what readJSON asks) reads it at once.
	orig, err := jobsStream.GetMsg(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, []byte(`{"job":1}`), orig.Data)
	assert.Equal(t, "acme", d.Tenant, "flags %v, reasons %q", d.Flags, d.MalformedReasons)
	assert.Equal(t, []byte(`{"job":1}`), d.Payload, "the original is in its stream; stored without it: flags %v", d.Flags)
	assert.NotContains(t, d.Flags, "original_unreadable", "reasons %q", d.MalformedReasons)
}

// TestRevIngest23ConsumerLimitsGiveUpStoredWithoutItsOriginal (review
// 23b): the same read refused on an ordinary (limits) stream whose
// consumer limits bound the inactive threshold below the 30 s
// (storedReadIdle) readByConsumer asks for: JetStream refuses the read's
// consumer (inactive threshold exceeds the stream's limit), and every
// give-up of the stream is stored without its original, under tenant
// unknown.
func TestRevIngest23ConsumerLimitsGiveUpStoredWithoutItsOriginal(t *testing.T) {
	t.Parallel()
	b := bigPayloadBundle(t)
	ctx := context.Background()
	orders := ordersStream
	orders.ConsumerLimits = jetstream.StreamConsumerLimits{InactiveThreshold: 20 * time.Second}
	s := b.createStream(t, orders)
	ws, err := ParseWatchStreams(orders.Name)
	require.NoError(t, err)
	b.start(t, IngestConfig{Watch: ws}, nil)

	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte(`{"amount":10}`)})
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 3})
	require.NoError(t, err)
	failingWorker(t, cons, 1, false)

	b.waitRows(t, 1)
	d, err := b.store.BySource(ctx, "ORDERS", 1, "refunder")
	require.NoError(t, err)
	orig, err := s.GetMsg(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, []byte(`{"amount":10}`), orig.Data)
	assert.Equal(t, "acme", d.Tenant, "flags %v, reasons %q", d.Flags, d.MalformedReasons)
	assert.Equal(t, []byte(`{"amount":10}`), d.Payload, "the original is in its stream; stored without it: flags %v", d.Flags)
}

// TestRevIngest23HeadersOnlyLookalikeNeverStored (review 23b): the DLQ
// side of the same read. A dead letter with no payload and a
// Nats-Msg-Size header (any producer may set one) may be a delivery of a
// consumer made headers only, so records reads it whole from the stream
// (rereadStored) and, while that read fails, naks it "however many
// deliveries it takes" (comeAgain): it is never stored, never given its
// position form, and holds the ingest consumer's ack floor and a place
// in its MaxAckPending for good. On a server with max_payload over
// 8 MiB the read is readByConsumer's, which JetStream refuses on a DLQ
// stream whose consumer limits bound the inactive threshold below 30 s
// (a setting the stream check does not look at), so one such dead letter
// (or 20,000, the consumer's MaxAckPending, and ingest stops) is never
// stored, while STREAM.MSG.GET would read it at once.
func TestRevIngest23HeadersOnlyLookalikeNeverStored(t *testing.T) {
	t.Parallel()
	b := bigPayloadBundle(t)
	ctx := context.Background()
	b.createStream(t, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"},
		ConsumerLimits: jetstream.StreamConsumerLimits{InactiveThreshold: 20 * time.Second}})
	b.start(t, IngestConfig{}, nil)

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders", Header: nats.Header{"Nats-Msg-Size": {"12"}, HeaderError: {"boom"}}})
	cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	var stored int
	var delivered uint64
	wait.Until(t, "the dead letter stored, or delivered more times than a refused one waits for its position form", time.Minute, func() bool {
		require.NoError(t, b.db.Pool.QueryRow(ctx, "SELECT count(*) FROM dead_letters").Scan(&stored))
		info, err := cons.Info(ctx)
		require.NoError(t, err)
		delivered = info.Delivered.Consumer
		return stored > 0 || delivered > maxRefusedDeliveries+1
	})
	assert.Equal(t, 1, stored, "dlq.acme.orders delivered %d times and never stored", delivered)
}
