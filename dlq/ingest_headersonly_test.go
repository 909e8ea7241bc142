package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// A consumer made headers only by hand (nats consumer edit DLQ
// quarantine-ingest --headers-only) delivers each message with its headers,
// a Nats-Msg-Size header the server adds, and no payload. Those tests check
// that the ingester stores such a message as the stream holds it.

// quietIngester makes an ingester on b (not running) and sets its stream
// and consumer up; the test hands it messages itself (pullOne, flush).
func (b *bundle) quietIngester(t *testing.T, js jetstream.JetStream) *Ingester {
	t.Helper()
	in := NewIngester(IngestConfig{}, js, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, in.Setup(context.Background()))
	return in
}

// pullOne asks the ingest consumer on DLQ for one message, as the puller
// does, and returns it as the puller hands it over.
func (b *bundle) pullOne(t *testing.T) pulledMsg {
	t.Helper()
	sub, err := b.nc.SubscribeSync(nats.NewInbox())
	require.NoError(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	req, err := json.Marshal(pullRequest{Batch: 1, Expires: 50 * time.Second})
	require.NoError(t, err)
	require.NoError(t, b.nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.DLQ.quarantine-ingest", sub.Subject, req))
	for {
		m, err := sub.NextMsg(time.Minute)
		require.NoError(t, err, "a message from the ingest consumer")
		if m.Reply != "" { // not a status
			return pulledMsg{m: m, inc: &incarnation{stream: "DLQ"}, received: time.Now()}
		}
	}
}

// storedHeaders is what the row of DLQ #seq holds as headers.
func (b *bundle) storedHeaders(t *testing.T, d DeadLetter) map[string][]string {
	t.Helper()
	hs, err := d.Headers()
	require.NoError(t, err)
	got, err := DecodeHeaders(hs)
	require.NoError(t, err)
	return got
}

// deliveryOf is the delivery a consumer's message of DLQ #seq names: the
// stream, the sequence and when the stream stored it.
func (b *bundle) deliveryOf(t *testing.T, seq uint64) string {
	t.Helper()
	s, err := b.js.Stream(context.Background(), "DLQ")
	require.NoError(t, err)
	m, err := s.GetMsg(context.Background(), seq)
	require.NoError(t, err)
	return fmt.Sprintf("DLQ #%d stored %s", seq, m.Time.UTC().Format(time.RFC3339Nano))
}

// waitAcked waits until the ingest consumer on DLQ has nothing unacked.
func (b *bundle) waitAcked(t *testing.T) {
	t.Helper()
	wait.Until(t, "everything delivered acked", time.Minute, func() bool {
		i := b.consumerInfo(t)
		return i.NumAckPending == 0 && i.AckFloor.Stream == i.Delivered.Stream
	})
}

// TestHeadersOnlyConsumerStoresWholePayload: while the ingest consumer is
// headers only, a dead letter is delivered without its payload; the row
// holds the whole payload and the producer's headers as the stream holds
// them (not the server's Nats-Msg-Size), under the delivery a whole
// delivery names: the same row, field for field, as the same dead letter
// delivered whole once the consumer is put back. Before, the row held an
// empty payload and the message was acked: the payload was lost.
func TestHeadersOnlyConsumerStoresWholePayload(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// The monitor checks once when Run starts; the test checks by hand after.
	r := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: time.Hour}, nil)
	wait.Until(t, "the first check", time.Minute, func() bool { return len(r.Health().Streams) == 1 })
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.HeadersOnly = true })

	msg := func() *nats.Msg {
		m := &nats.Msg{Subject: "dlq.acme.orders.refund", Data: []byte(`{"order":9,"amount":"12.50"}`), Header: nats.Header{}}
		m.Header.Set(HeaderOriginalSubject, "app.acme.orders.refund")
		m.Header.Set(HeaderError, "boom")
		m.Header.Set("X-Trace", "trace-9")
		return m
	}
	publish(t, b.js, msg())
	b.waitRows(t, 1)
	b.waitAcked(t)

	d, err := b.store.BySource(ctx, "DLQ", 1, "")
	require.NoError(t, err)
	assert.Equal(t, `{"order":9,"amount":"12.50"}`, string(d.Payload), "the whole payload")
	assert.EqualValues(t, len(`{"order":9,"amount":"12.50"}`), d.PayloadSize)
	assert.False(t, d.PayloadUnavailable)
	headers := b.storedHeaders(t, d)
	assert.Equal(t, []string{"trace-9"}, headers["X-Trace"], "the producer's headers")
	assert.NotContains(t, headers, nats.MsgSize, "the server's header is not the producer's")
	assert.Equal(t, b.deliveryOf(t, 1), d.Delivery, "the delivery a whole delivery names")
	assert.Empty(t, d.Flags)

	// The same dead letter delivered whole is stored the same.
	r.check(ctx, "DLQ")
	wait.Until(t, "headers only put back", time.Minute, func() bool { return !b.consumerInfo(t).Config.HeadersOnly })
	publish(t, b.js, msg())
	b.waitRows(t, 2)
	w, err := b.store.BySource(ctx, "DLQ", 2, "")
	require.NoError(t, err)
	assert.Equal(t, w.Payload, d.Payload)
	assert.Equal(t, w.PayloadSHA256, d.PayloadSHA256)
	assert.Equal(t, b.storedHeaders(t, w), headers)
	assert.Equal(t, w.HeaderBlock, d.HeaderBlock)
	assert.Equal(t, w.Flags, d.Flags)
	assert.Equal(t, w.Fingerprint, d.Fingerprint)
}

// TestProducerSetMsgSizeHeaderKept: Nats-Msg-Size is a header any
// producer may set, on a message with a payload or with none (an empty
// payload is legal). Such a dead letter is stored exactly as published:
// its header kept, its payload as it is, nothing flagged, whether the
// consumer delivered it whole or headers only (the server's own
// Nats-Msg-Size then follows the producer's, and is not stored).
func TestProducerSetMsgSizeHeaderKept(t *testing.T) {
	t.Parallel()
	for name, headersOnly := range map[string]bool{"Whole": false, "HeadersOnly": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			in := b.quietIngester(t, b.js)
			if headersOnly {
				b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.HeadersOnly = true })
			}
			for seq, c := range []struct {
				data, size string
				delivered  []string // Nats-Msg-Size as delivered
			}{
				{"a real payload", "999", []string{"999", "14"}},
				{"", "5", []string{"5", "0"}}, // says 5, has none
				{"", "0", []string{"0", "0"}},
			} {
				m := &nats.Msg{Subject: "dlq.acme.orders.refund", Data: []byte(c.data), Header: nats.Header{}}
				m.Header[nats.MsgSize] = []string{c.size}
				m.Header.Set(HeaderOriginalSubject, "app.acme.orders.refund")
				publish(t, b.js, m)
				got := b.pullOne(t)
				if headersOnly {
					require.Equal(t, c.delivered, got.Headers()[nats.MsgSize], "delivered headers only")
					require.Empty(t, got.Data())
				}
				in.flush(ctx, []item{{msg: got}})

				d, err := b.store.BySource(ctx, "DLQ", uint64(seq+1), "")
				require.NoError(t, err)
				assert.Equal(t, c.data, string(d.Payload), "payload of #%d", seq+1)
				assert.Equal(t, []string{c.size}, b.storedHeaders(t, d)[nats.MsgSize], "the producer's header, alone, of #%d", seq+1)
				assert.Empty(t, d.Flags, "#%d", seq+1)
				assert.False(t, d.PayloadUnavailable, "#%d", seq+1)
				assert.Equal(t, b.deliveryOf(t, uint64(seq+1)), d.Delivery)
			}
			b.waitAcked(t)
		})
	}
}

// TestHeadersOnlyDeliveryOfEmptyPayloadStoredEmpty: a dead letter with an
// empty payload and no headers, delivered headers only, is stored as
// published: empty, with no headers (the server's Nats-Msg-Size is not
// one of them), nothing flagged.
func TestHeadersOnlyDeliveryOfEmptyPayloadStoredEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in := b.quietIngester(t, b.js)
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.HeadersOnly = true })
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders.refund"})
	m := b.pullOne(t)
	require.Equal(t, []string{"0"}, m.Headers()[nats.MsgSize], "delivered headers only")
	in.flush(ctx, []item{{msg: m}})

	d, err := b.store.BySource(ctx, "DLQ", 1, "")
	require.NoError(t, err)
	assert.Empty(t, d.Payload)
	assert.Empty(t, b.storedHeaders(t, d))
	assert.Nil(t, d.HeaderBlock)
	assert.Equal(t, []string{"missing:original_subject"}, d.Flags)
	b.waitAcked(t)
}

// TestHeadersOnlyDeliveryOfDeletedMessageFlagged: a dead letter delivered
// headers only and deleted from the stream before the ingester could read
// it (nats stream rmm, an age limit) cannot be read whole any more. It is
// stored as delivered, never dropped: its headers, no payload, under its
// own delivery, flagged payload_unverified with a sentence that says why
// and what size the delivery stated, its payload unavailable (so no replay
// sends an empty payload under its identity), and acked.
func TestHeadersOnlyDeliveryOfDeletedMessageFlagged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in := b.quietIngester(t, b.js)
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.HeadersOnly = true })
	m := &nats.Msg{Subject: "dlq.acme.orders.refund", Data: []byte("the refund order"), Header: nats.Header{}}
	m.Header.Set(HeaderOriginalSubject, "app.acme.orders.refund")
	m.Header.Set("X-Trace", "trace-3")
	publish(t, b.js, m)
	delivery := b.deliveryOf(t, 1)
	got := b.pullOne(t)
	require.Empty(t, got.Data(), "delivered headers only")

	s, err := b.js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	require.NoError(t, s.DeleteMsg(ctx, 1))
	in.flush(ctx, []item{{msg: got}})

	d, err := b.store.BySource(ctx, "DLQ", 1, "")
	require.NoError(t, err)
	assert.Equal(t, delivery, d.Delivery)
	assert.Contains(t, d.Flags, "payload_unverified")
	assert.True(t, d.PayloadUnavailable)
	assert.Empty(t, d.Payload)
	assert.Equal(t, []string{"trace-3"}, b.storedHeaders(t, d)["X-Trace"], "the headers as delivered")
	reasons := strings.Join(d.MalformedReasons, "\n")
	assert.Contains(t, reasons, "Nats-Msg-Size 16", "the size the delivery stated")
	assert.Contains(t, reasons, "not found")
	b.waitAcked(t)
}

// TestHeadersOnlyDeliveryComesAgainWhenTheStreamCannotBeRead: a dead
// letter delivered headers only, whose stored copy cannot be read at that
// moment (the ingester's connection is down), is neither stored nor acked:
// it comes again, and is stored whole then.
func TestHeadersOnlyDeliveryComesAgainWhenTheStreamCannotBeRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in := b.quietIngester(t, b.js)
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.HeadersOnly = true })
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders.refund", Data: []byte("the refund order")})

	nc, closedJS := b.ns.Connect(t)
	nc.Close()
	down := NewIngester(IngestConfig{}, closedJS, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	first := b.pullOne(t)
	require.Empty(t, first.Data(), "delivered headers only")
	down.flush(ctx, []item{{msg: first}})
	assert.Zero(t, countRows(t, b.db.Pool, "true"), "not stored without its payload")

	again := b.pullOne(t)
	md, err := again.Metadata()
	require.NoError(t, err)
	assert.EqualValues(t, 1, md.Sequence.Stream)
	assert.EqualValues(t, 2, md.NumDelivered, "it came again")
	in.flush(ctx, []item{{msg: again}})
	d, err := b.store.BySource(ctx, "DLQ", 1, "")
	require.NoError(t, err)
	assert.Equal(t, "the refund order", string(d.Payload))
	assert.NotContains(t, d.Flags, "payload_unverified")
	b.waitAcked(t)
}

// TestHeadersOnlyDeliveryOfUnendedHeaderBlock: the server writes its
// Nats-Msg-Size line in place of the last two bytes of a header block (the
// CR LF that end it as clients write it). A hostile producer's block that
// does not end so has the line run into its last value, or past the end
// of the block the client reads; such a delivery, with no payload, is read
// whole from the stream too, and stored with its payload.
func TestHeadersOnlyDeliveryOfUnendedHeaderBlock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in := b.quietIngester(t, b.js)
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.HeadersOnly = true })
	raw := b.ns.DialRaw(t)
	blocks := []string{
		"NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.refund\r\nX-A: b",            // runs into the value
		"NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.refund\r\nX-A: bc",           // is the value, read whole
		"NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.refund\r\nX-Abc",             // runs into the name, read whole
		"NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.refund\r\n\r\nafter the end", // past the end
	}
	for i, block := range blocks {
		ack, err := raw.Publish("dlq.acme.orders.refund", []byte(block), []byte("the refund order"))
		require.NoError(t, err)
		require.Nil(t, ack.Error, "stored")
		m := b.pullOne(t)
		require.Empty(t, m.Data(), "delivered headers only")
		_, sized := m.Headers()[nats.MsgSize]
		require.False(t, sized, "the client does not read the server's line as a header of its own")
		in.flush(ctx, []item{{msg: m}})

		d, err := b.store.BySource(ctx, "DLQ", uint64(i+1), "")
		require.NoError(t, err)
		assert.Equal(t, "the refund order", string(d.Payload), "block %q", block)
		assert.Equal(t, []byte(block), d.HeaderBlock, "the block as stored")
		assert.Equal(t, "app.acme.orders.refund", d.OriginalSubject)
		assert.NotContains(t, d.Flags, "payload_unverified")
	}
	b.waitAcked(t)
}

// TestPayloadUnverifiedByStatedSize: a delivery that may lack its payload
// and could not be read whole is flagged payload_unverified with the size
// it stated (the last Nats-Msg-Size: the server's follows any the
// producer set), quoted when it is not a number; its payload is
// unavailable unless that size is 0 and can be the server's: a 0 read
// from a header block the client did not read whole, or beside another
// header that holds Nats-Msg-Size (the server's line run into a producer's
// last header), may be the producer's, and the payload stays unavailable.
func TestPayloadUnverifiedByStatedSize(t *testing.T) {
	t.Parallel()
	gone := fmt.Errorf("read DLQ #7 from the stream: %w", jetstream.ErrMsgNotFound)
	for name, c := range map[string]struct {
		sizes       []string
		other       map[string][]string // headers besides Nats-Msg-Size
		blockErr    error
		unavailable bool
		says        string
	}{
		"Stated":       {sizes: []string{"16"}, unavailable: true, says: "Nats-Msg-Size 16 and no payload"},
		"ServerSaysNo": {sizes: []string{"999", "0"}, says: "Nats-Msg-Size 0 and no payload"},
		"NotANumber":   {sizes: []string{"<b>12</b>"}, unavailable: true, says: `Nats-Msg-Size "<b>12</b>" and no payload`},
		"Unread":       {unavailable: true, says: "Nats-Msg-Size (none the NATS client could read) and no payload"},
		"ZeroFromABlockReadInPart": {sizes: []string{"0"}, blockErr: errors.New("stream unavailable"), unavailable: true,
			says: "the NATS client did not read the header block whole"},
		"ZeroBesideARunInSize": {sizes: []string{"0"}, other: map[string][]string{"X-Tag": {"v1Nats-Msg-Size: 512"}}, unavailable: true,
			says: "another header holds Nats-Msg-Size"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var h map[string][]string
			if c.sizes != nil || c.other != nil {
				h = map[string][]string{}
				maps.Copy(h, c.other)
			}
			if c.sizes != nil {
				h[nats.MsgSize] = c.sizes
			}
			r := ParseDLQ("dlq", Received{Subject: "dlq.acme.orders.refund", Header: h, HeaderBlockErr: c.blockErr, Data: []byte{}, Stream: "DLQ", Seq: 7,
				Time: time.Now().UTC(), PayloadErr: gone})
			assert.Contains(t, r.Flags, "payload_unverified")
			assert.Equal(t, c.unavailable, r.PayloadUnavailable)
			reasons := strings.Join(r.MalformedReasons, "\n")
			assert.Contains(t, reasons, c.says)
			assert.Contains(t, reasons, "message not found")
			assert.Equal(t, c.sizes, r.headerValues(nats.MsgSize), "kept as delivered")
		})
	}
}

// headerValues are the values of the header name r keeps.
func (r *Record) headerValues(name string) []string {
	h, err := DecodeHeaders(r.Headers)
	if err != nil {
		return nil
	}
	return h[name]
}

// TestHeadersOnlyDeliveryPutsTheConsumerBack: a delivery that proves the
// ingest consumer headers only (the stream's copy has the payload the
// delivery lacked) has the consumer's settings put back at once, not at
// the next check (an hour here): every dead letter delivered meanwhile
// costs a read from the stream.
func TestHeadersOnlyDeliveryPutsTheConsumerBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: time.Hour}, nil)
	wait.Until(t, "the first check", time.Minute, func() bool { return len(r.Health().Streams) == 1 })
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.HeadersOnly = true })
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders.refund", Data: []byte("the refund order")})
	b.waitRows(t, 1)
	wait.Until(t, "headers only put back and counted", time.Minute, func() bool {
		return !b.consumerInfo(t).Config.HeadersOnly && testutil.ToFloat64(r.metrics.ConsumerRepaired.WithLabelValues("DLQ")) >= 1
	})
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'the refund order'"))
}
