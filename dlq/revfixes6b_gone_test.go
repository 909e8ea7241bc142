package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevFixes6bRealGiveUpOfDeletedConsumerKeepsSubject: a worker gives up
// on a message (max deliveries) and its consumer is removed as a library-
// managed one is when the worker stops (nats.go's Subscribe deletes the
// consumer it made on Unsubscribe/Drain), while the console lags (its
// ingest not running yet: a deploy, an outage). The advisory was captured
// by JetStream before the consumer went. The real give-up is stored with
// its original subject erased: no replay can ever send it, and "re-publish
// it from the producer" is no help for a consumer-side failure.
func TestRevFixes6bRealGiveUpOfDeletedConsumerKeepsSubject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	cfg := IngestConfig{Watch: ws}
	b.idle(t, cfg) // the advisory stream exists; nothing ingests yet
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 3})
	require.NoError(t, err)
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("poison")})
	failingWorker(t, cons, 1, false)
	wait.Until(t, "the advisory captured", time.Minute, func() bool {
		s, err := b.js.Stream(ctx, "DLQ_ADVISORIES")
		return err == nil && s.CachedInfo().State.Msgs >= 1
	})
	require.NoError(t, b.js.DeleteConsumer(ctx, "ORDERS", "worker")) // the worker stopped

	b.start(t, cfg, nil)
	b.waitRows(t, 1)
	d, err := b.store.BySource(ctx, "ORDERS", 1, "worker")
	require.NoError(t, err)
	assert.Equal(t, []byte("poison"), d.Payload)
	assert.Equal(t, "app.acme.orders.refund", d.OriginalSubject,
		"a real give-up whose consumer is gone by ingest time keeps its subject (flagged, left out by the replay rules, still in its stream to redeliver), not lose it for good")
}
