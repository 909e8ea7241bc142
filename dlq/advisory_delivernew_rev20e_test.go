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

// TestRevIngest20ForgedGiveUpBeforeDeliverNewConsumer: the sibling of
// TestRevIngest20ForgedGiveUpBeforeConsumerStart that its fix left out.
// Consumer "auditor" was made with DeliverNew after sequences 1 and 2 were
// stored, so it never delivers them; it delivered (and terminated)
// sequence 3. A MSG_TERMINATED advisory naming it and sequence 1 (globex's
// message, handled by everyone) passes checkAdvisoryConsumer, which looks
// at where a consumer starts only for DeliverByStartSequence and
// DeliverByStartTime, and is stored as a verified, replayable give-up of a
// message nobody gave up on.
func TestRevIngest20ForgedGiveUpBeforeDeliverNewConsumer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)
	publish(t, b.js, &nats.Msg{Subject: "app.globex.orders.refund", Data: []byte("innocent")})
	publish(t, b.js, &nats.Msg{Subject: "app.globex.orders.refund", Data: []byte("innocent too")})
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "auditor", AckPolicy: jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverNewPolicy})
	require.NoError(t, err)
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("poison")})
	failingWorker(t, cons, 1, true) // terms seq 3, the first it ever delivers
	info, err := cons.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(3), info.Delivered.Stream)

	forged := `{"type":"io.nats.jetstream.advisory.v1.terminated","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
		`","stream":"ORDERS","consumer":"auditor","stream_seq":1,"deliveries":1}`
	publish(t, b.js, &nats.Msg{Subject: AdvisoryTerminated + ".ORDERS.auditor", Data: []byte(forged)})
	b.waitRows(t, 2)

	f, err := b.store.BySource(ctx, "ORDERS", 1, "auditor")
	require.NoError(t, err)
	require.Equal(t, []byte("innocent"), f.Payload)
	assert.Contains(t, f.Flags, FlagAdvisoryUnverified,
		"consumer auditor delivers only messages stored after it was made (DeliverNew) and never delivered 1; stored as %v with original subject %q", f.Flags, f.OriginalSubject)
}
