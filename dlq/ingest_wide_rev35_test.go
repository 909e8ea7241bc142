package dlq

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev35LiveAdvisoryWideFailureAtFifthDeliveryIsNotStored: the live
// path counted every failed read of an advisory's original toward its
// five deliveries, NATS's failures too (the connection down, no
// responders, no quorum while a stream's leader is elected), though the
// sweep does not. At the fifth delivery during a short NATS outage the
// give-up was stored for good in tenant unknown, without its original,
// flagged original_unreadable, and acked: its tenant's on-call never saw
// it, and nothing read it again though its stream still held it. A read
// NATS does not answer now keeps the advisory coming for maxWideDeliveries
// more deliveries (some 27 minutes with rereadDelay's backoff); past them
// it is stored flagged as before.
func TestRev35LiveAdvisoryWideFailureAtFifthDeliveryIsNotStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.created", Data: []byte("the refund order")})
	quietLog := slog.New(slog.NewTextHandler(io.Discard, nil))

	adv := []byte(`{"type":"io.nats.jetstream.advisory.v1.terminated","stream":"ORDERS","consumer":"refunder","stream_seq":1,"deliveries":2}`)
	msg := func(delivered int, stored time.Time) pulledMsg {
		sub, err := b.nc.SubscribeSync(nats.NewInbox())
		require.NoError(t, err)
		return pulledMsg{inc: &incarnation{stream: "DLQ_ADVISORIES"}, received: time.Now(), m: &nats.Msg{Sub: sub,
			Subject: AdvisoryTerminated + ".ORDERS.refunder",
			Reply:   fmt.Sprintf("$JS.ACK.DLQ_ADVISORIES.quarantine-ingest.%d.7.7.%d.0", delivered, stored.UnixNano()),
			Data:    adv,
		}}
	}
	nc, closedJS := b.ns.Connect(t)
	nc.Close() // NATS not answering: no read of any message can succeed
	down := NewIngester(IngestConfig{Watch: ws}, closedJS, b.store, NewMetrics(prometheus.NewRegistry()), quietLog)
	items := make(chan item, 1)
	for _, delivered := range []int{maxHeaderRereads, maxHeaderRereads + maxWideDeliveries - 1} {
		down.handleAdvisory(ctx, msg(delivered, time.Now()), items)
		require.Empty(t, items, "delivery %d: stored without its original because NATS did not answer for a while", delivered)
	}
	// Its nak asks for rereadDelay's wait: 8 s at the seventh delivery.
	seventh := msg(maxHeaderRereads+2, time.Now())
	acks, err := b.nc.SubscribeSync(seventh.m.Reply)
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())
	down.handleAdvisory(ctx, seventh, items)
	require.Empty(t, items)
	nak, err := acks.NextMsg(10 * time.Second)
	require.NoError(t, err, "the advisory was not nak'd")
	assert.Equal(t, fmt.Sprintf(`-NAK {"delay": %d}`, (8*time.Second).Nanoseconds()), string(nak.Data))

	// NATS answers again: the next delivery reads the original.
	up := NewIngester(IngestConfig{Watch: ws}, b.js, b.store, NewMetrics(prometheus.NewRegistry()), quietLog)
	up.handleAdvisory(ctx, msg(maxHeaderRereads+maxWideDeliveries-1, time.Now()), items)
	require.Len(t, items, 1)
	up.flush(ctx, []item{<-items})
	d, err := b.store.BySource(ctx, "ORDERS", 1, "refunder")
	require.NoError(t, err)
	assert.Equal(t, "acme", d.Tenant, "%v %s", d.Flags, d.Error)
	assert.Equal(t, "the refund order", string(d.Payload))
	assert.NotContains(t, d.Flags, "original_unreadable")

	// Not forever: past maxWideDeliveries more deliveries it is stored, flagged.
	down.handleAdvisory(ctx, msg(maxHeaderRereads+maxWideDeliveries, time.Now()), items)
	require.Len(t, items, 1, "a read NATS never answers is waited for without end")
	assert.Contains(t, (<-items).rec.Flags, "original_unreadable")
}

// TestRev35HeaderBlockRereadWaitsOutNATS: a dead letter whose header
// block must be read again from the stream was stored without it at its
// fifth delivery whatever made the reads fail, a NATS outage too. A read
// NATS does not answer now brings it again for maxWideDeliveries more
// deliveries; past them it is stored without the block, as before.
func TestRev35HeaderBlockRereadWaitsOutNATS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	nc, closedJS := b.ns.Connect(t)
	nc.Close()
	in := NewIngester(IngestConfig{}, closedJS, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	delivery := func(delivered int) (pulledMsg, *Received) {
		sub, err := b.nc.SubscribeSync(nats.NewInbox())
		require.NoError(t, err)
		m := pulledMsg{inc: &incarnation{stream: "DLQ"}, received: time.Now(), m: &nats.Msg{Sub: sub, Subject: "dlq.acme.orders",
			Reply: fmt.Sprintf("$JS.ACK.DLQ.quarantine-ingest.%d.3.3.%d.0", delivered, time.Now().UnixNano())}}
		return m, &Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: 3, Time: time.Now()}
	}
	m, r := delivery(maxHeaderRereads)
	assert.True(t, in.rereadStored(ctx, m, r, true, false), "stored without its header block at its fifth delivery while NATS did not answer")
	// A payload it may lack (delivered headers only) waits the same way.
	m, r = delivery(maxHeaderRereads)
	assert.True(t, in.rereadStored(ctx, m, r, false, true), "stored without its payload at its fifth delivery while NATS did not answer")
	m, r = delivery(maxHeaderRereads + maxWideDeliveries)
	assert.False(t, in.rereadStored(ctx, m, r, false, true), "a payload read NATS never answers is waited for without end")
	m, r = delivery(maxHeaderRereads + maxWideDeliveries)
	assert.False(t, in.rereadStored(ctx, m, r, true, false), "a read NATS never answers is waited for without end")

	// The nak asks for rereadDelay's wait: 8 s at the seventh delivery.
	m, r = delivery(maxHeaderRereads + 2)
	acks, err := b.nc.SubscribeSync(m.m.Reply)
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())
	require.True(t, in.rereadStored(ctx, m, r, true, false))
	nak, err := acks.NextMsg(10 * time.Second)
	require.NoError(t, err, "the delivery was not nak'd")
	assert.Equal(t, fmt.Sprintf(`-NAK {"delay": %d}`, (8*time.Second).Nanoseconds()), string(nak.Data))
}

// TestRev35RereadDelayBacksOff: the wait before each delivery again after
// a failed read: 2 s for the first deliveries, then doubling to a minute,
// so that maxWideDeliveries span a NATS restart.
func TestRev35RereadDelayBacksOff(t *testing.T) {
	t.Parallel()
	var total time.Duration
	for n := uint64(1); n < maxHeaderRereads+maxWideDeliveries; n++ {
		total += rereadDelay(n)
	}
	assert.Equal(t, 2*time.Second, rereadDelay(1))
	assert.Equal(t, 4*time.Second, rereadDelay(maxHeaderRereads+1))
	assert.Equal(t, time.Minute, rereadDelay(maxHeaderRereads+maxWideDeliveries-1))
	assert.Greater(t, total, 20*time.Minute, "the deliveries a read NATS does not answer is waited for span %s", total)
}
