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

// TestAdvisoryForASequenceItsConsumerNeverDeliveredIsFlagged: the consumer
// an advisory names exists, and gave up on one message; a forged advisory
// naming it and a later message (another tenant's) it never delivered is
// stored flagged advisory_unverified, with no original subject (never
// replayed); the real one is not flagged.
func TestAdvisoryForASequenceItsConsumerNeverDeliveredIsFlagged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubject: "app.acme.>"})
	require.NoError(t, err)
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("poison")})
	failingWorker(t, cons, 1, true)
	publish(t, b.js, &nats.Msg{Subject: "app.globex.orders.refund", Data: []byte("innocent")})
	forged := `{"type":"io.nats.jetstream.advisory.v1.terminated","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
		`","stream":"ORDERS","consumer":"refunder","stream_seq":2,"deliveries":1}`
	publish(t, b.js, &nats.Msg{Subject: AdvisoryTerminated + ".ORDERS.refunder", Data: []byte(forged)})
	b.waitRows(t, 2)

	real, err := b.store.BySource(ctx, "ORDERS", 1, "refunder")
	require.NoError(t, err)
	assert.NotContains(t, real.Flags, "advisory_unverified")
	assert.Equal(t, "app.acme.orders.refund", real.OriginalSubject)

	f, err := b.store.BySource(ctx, "ORDERS", 2, "refunder")
	require.NoError(t, err)
	assert.Contains(t, f.Flags, "advisory_unverified")
	assert.Contains(t, strings.Join(f.MalformedReasons, "\n"), "has delivered up to stream sequence 1 only, not 2")
	assert.Empty(t, f.OriginalSubject, "no replay publishes it")
	assert.Equal(t, []byte("innocent"), f.Payload, "kept for inspection")
}

// TestStreamMessageTTLsReported: per-message TTLs turned on by hand
// (JetStream never turns them off) are reported as drift, with the
// command that puts the stream back.
func TestStreamMessageTTLsReported(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r, _ := b.watched(t, IngestConfig{})
	b.editStream(t, func(c *jetstream.StreamConfig) { c.AllowMsgTTL = true })
	wait.Until(t, "the drift reported", time.Minute, func() bool {
		h := r.Health()
		return len(h.Streams) == 1 && strings.Contains(h.Streams[0].StreamDrift, "allow_msg_ttl: true → false")
	})
	assert.Contains(t, r.Health().Streams[0].StreamDrift, "nats stream rm DLQ -f")
}
