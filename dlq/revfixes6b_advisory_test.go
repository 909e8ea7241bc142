package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevFixes6bForgedAdvisoryFilteredConsumerPastSeq: a consumer filtered
// to tenant acme has delivered stream sequences 1 and 3 (both acme); its
// Delivered.Stream is 3. A forged advisory naming it and sequence 2
// (globex's message, which that consumer can never deliver) passes
// checkAdvisoryConsumer's "delivered up to" test and is stored as a clean,
// replayable dead letter of another tenant.
func TestRevFixes6bForgedAdvisoryFilteredConsumerPastSeq(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubject: "app.acme.>"})
	require.NoError(t, err)
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("poison")})
	publish(t, b.js, &nats.Msg{Subject: "app.globex.orders.refund", Data: []byte("innocent")})
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("fine")})
	failingWorker(t, cons, 2, true) // terms seq 1 and seq 3: Delivered.Stream = 3
	forged := `{"type":"io.nats.jetstream.advisory.v1.terminated","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
		`","stream":"ORDERS","consumer":"refunder","stream_seq":2,"deliveries":1}`
	publish(t, b.js, &nats.Msg{Subject: AdvisoryTerminated + ".ORDERS.refunder", Data: []byte(forged)})
	b.waitRows(t, 3)

	f, err := b.store.BySource(ctx, "ORDERS", 2, "refunder")
	require.NoError(t, err)
	assert.Equal(t, []byte("innocent"), f.Payload)
	assert.Contains(t, f.Flags, "advisory_unverified", "consumer refunder (filter app.acme.>) never delivered globex's sequence 2")
	assert.Empty(t, f.OriginalSubject, "a forged give-up of another tenant's message must not be replayable")
}
