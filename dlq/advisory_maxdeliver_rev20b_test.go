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

// TestRevIngest20ForgedMaxDeliveriesOfConsumerThatNeverGivesUp: consumer
// "indexer" of the watched stream has no MaxDeliver (-1, the default:
// JetStream never gives up on a message for it, so it never raises a
// MAX_DELIVERIES advisory). It processed and acked sequence 1. A
// MAX_DELIVERIES advisory naming it and sequence 1, written by anyone who
// may publish on an advisory subject, passes checkAdvisoryConsumer (the
// consumer exists, has delivered sequence 1, takes its subject) and is
// stored as a verified, replayable give-up of a message that was handled:
// an operator replaying it (past the target's duplicate window) makes a
// second effect. A MAX_DELIVERIES give-up by a consumer that has no
// MaxDeliver cannot have happened, as surely as one past its delivered
// sequence.
func TestRevIngest20ForgedMaxDeliveriesOfConsumerThatNeverGivesUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "indexer", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte(`{"refund":"r-1"}`)})
	msgs, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	require.NoError(t, err)
	handled := 0
	for m := range msgs.Messages() {
		require.NoError(t, m.DoubleAck(ctx), "processed and acked: no give-up")
		handled++
	}
	require.NoError(t, msgs.Error())
	require.Equal(t, 1, handled)
	info, err := cons.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, -1, info.Config.MaxDeliver, "a consumer without MaxDeliver never gives up")

	forged := `{"type":"io.nats.jetstream.advisory.v1.max_deliver","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
		`","stream":"ORDERS","consumer":"indexer","stream_seq":1,"deliveries":5}`
	publish(t, b.js, &nats.Msg{Subject: AdvisoryMaxDeliveries + ".ORDERS.indexer", Data: []byte(forged)})
	b.waitRows(t, 1)

	f, err := b.store.BySource(ctx, "ORDERS", 1, "indexer")
	require.NoError(t, err)
	require.Equal(t, ClassMaxDeliveries, f.ErrorClass)
	assert.Contains(t, f.Flags, FlagAdvisoryUnverified,
		"consumer indexer has no MaxDeliver, so no MAX_DELIVERIES advisory of it is real; stored as %v with original subject %q", f.Flags, f.OriginalSubject)
}

// TestRevIngest20ForgedGiveUpBeforeConsumerStart: consumer "auditor"
// starts at stream sequence 3 (DeliverByStartSequence; DeliverNew and
// DeliverLast start past what the stream held too), so it never delivers
// sequences 1 and 2, and has delivered sequence 3. A MSG_TERMINATED
// advisory naming it and sequence 1 (another tenant's message) passes
// checkAdvisoryConsumer, whose "cannot have delivered it" looks only at
// the last sequence delivered and the filter (TestRevFixes6bForgedAdvisory-
// FilteredConsumerPastSeq fixed the filter), and is stored as a verified,
// replayable give-up of globex's message that nobody gave up on.
func TestRevIngest20ForgedGiveUpBeforeConsumerStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)
	publish(t, b.js, &nats.Msg{Subject: "app.globex.orders.refund", Data: []byte("innocent")})
	publish(t, b.js, &nats.Msg{Subject: "app.globex.orders.refund", Data: []byte("innocent too")})
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("poison")})
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "auditor", AckPolicy: jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: 3})
	require.NoError(t, err)
	failingWorker(t, cons, 1, true) // terms seq 3, the only one it ever delivers
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
		"consumer auditor starts at sequence 3 and never delivered 1; stored as %v with original subject %q", f.Flags, f.OriginalSubject)
}
