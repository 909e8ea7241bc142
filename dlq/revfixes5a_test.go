package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// Review rev-fixes5a: the ingest sweep and headers-only deliveries.

// TestRevFixes5aSweepStuckSequenceBlocksTheRest: one dead letter acked
// without a row that the sweep cannot store (PostgreSQL refuses it in
// every form; the same holds for one whose read from the stream keeps
// failing) holds the watermark before it, as it should, but a step that
// stops short also ends the sweep (more is false), and the next sweep
// starts from the same watermark with the same 10,000-sequence window:
// no sweep ever looks past watermark+10,000 again. Every dead letter
// acked without a row after that (here #10,002-#10,010, passed over by a
// consumer moved forward by hand) is never stored, and the stream's age
// limit later deletes it. One dead letter stalls the safety net for all
// the others (invariant 10). A fixed sweep keeps the watermark before the
// stuck one but goes on proving (and storing) what lies after it, up to
// its bound of steps.
func TestRevFixes5aSweepStuckSequenceBlocksTheRest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{})

	const total = sweepStep + 10
	for seq := 1; seq <= total; seq++ {
		data := "ok"
		if seq == 2 {
			data = "new 1" // refused by refuseNewOne's trigger
		}
		_, err := b.js.PublishAsync("dlq.acme.search.index_update", []byte(data))
		require.NoError(t, err)
		if seq%1000 == 0 {
			select {
			case <-b.js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				t.Fatal("publishes not acked within a minute")
			}
		}
	}
	select {
	case <-b.js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		t.Fatal("publishes not acked within a minute")
	}
	// Someone moves the ingest consumer past them all (nats consumer
	// reset DLQ quarantine-ingest <seq>, or a peek of every one): all
	// acked, none delivered to the console.
	_, err := b.js.ResetConsumerToSequence(ctx, "DLQ", "quarantine-ingest", total+1)
	require.NoError(t, err)
	wait.Until(t, "the ack floor past them all", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == total })
	refuseNewOne(t, b)

	for range 3 {
		_, err := in.sweep(ctx, "DLQ")
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), b.sweptTo(t, "DLQ"), "the watermark held before the one refused")
	assert.Equal(t, total-1, countRows(t, b.db.Pool, "true"),
		"every dead letter acked without a row but the one PostgreSQL refuses is stored by the sweeps (lead: those past watermark+%d never are)", sweepStep)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "source_seq = $1", int64(total)), "the last one, #%d, stored", total)
}

// TestRevFixes5aPayloadUnverifiedTrustsProducerSize: the server writes its
// Nats-Msg-Size line in place of the last two bytes of a header block; a
// producer's block that does not end in CR LF has that line run into its
// last value (mayLackPayload knows this). When that producer also set
// "Nats-Msg-Size: 0" itself, the only Nats-Msg-Size the client reads is
// the producer's. If the stream no longer holds the message when it is
// read whole, payloadUnverified takes that 0 as the server's word ("the
// payload is empty either way") and stores the dead letter with an empty
// payload that is NOT unavailable: a replay may publish an empty payload
// under the original's identity, though the stream held 16 bytes. The
// stated size can be trusted only when no other header carries the
// server's line run into it.
func TestRevFixes5aPayloadUnverifiedTrustsProducerSize(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in := b.quietIngester(t, b.js)
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.HeadersOnly = true })
	raw := b.ns.DialRaw(t)
	block := "NATS/1.0\r\nNats-Msg-Size: 0\r\nDlq-Original-Subject: app.acme.orders.refund\r\nX-A: b"
	ack, err := raw.Publish("dlq.acme.orders.refund", []byte(block), []byte("the refund order"))
	require.NoError(t, err)
	require.Nil(t, ack.Error, "stored")

	m := b.pullOne(t)
	require.Empty(t, m.Data(), "delivered headers only")
	require.Equal(t, []string{"0"}, m.Headers()[nats.MsgSize], "the only size the client reads is the producer's")
	var runIn bool
	for k, vs := range m.Headers() {
		for _, v := range vs {
			runIn = runIn || (k != nats.MsgSize && strings.Contains(v, nats.MsgSize))
		}
	}
	require.True(t, runIn, "the server's line ran into the producer's last value: %v", m.Headers())

	s, err := b.js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	require.NoError(t, s.DeleteMsg(ctx, 1)) // gone before it is read whole
	in.flush(ctx, []item{{msg: m}})

	d, err := b.store.BySource(ctx, "DLQ", 1, "")
	require.NoError(t, err)
	assert.Contains(t, d.Flags, "payload_unverified")
	assert.Empty(t, d.Payload)
	assert.True(t, d.PayloadUnavailable,
		"the stream held a 16-byte payload; the 0 was the producer's, not the server's: the payload must be unavailable, not empty (reasons %q)", d.MalformedReasons)
	b.waitAcked(t)
}
