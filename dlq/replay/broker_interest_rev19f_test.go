package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevBroker19InterestStreamAckWithoutStoreShownReplayed: the target
// stream has interest retention, and no consumer of it is interested in
// the replay's subject (the service's consumer is gone, or filters other
// subjects). nats-server answers such a publish with an ordinary PubAck
// naming the stream and a sequence (stream.go: noInterest ->
// SkipMsgNoInterest) but stores nothing: no consumer will ever receive
// it. The console shows the item replayed ("stored as APP:1"), its dead
// letter green and in the ledger, while the broker did not store our
// publish (invariant 13).
func TestRevBroker19InterestStreamAckWithoutStoreShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.js.DeleteStream(ctx, "APP"))
	b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Retention: jetstream.InterestPolicy})
	// The stream has a consumer, for other subjects than the replay's.
	_, err := b.target.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "orders", FilterSubject: "app.acme.orders.>", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)

	id := b.seedItem(t, "search.index_update", "interest-no-consumer", nil, `{"doc":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)

	info, err := b.target.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "the broker stored nothing: no consumer is interested in the subject")
	j := b.job(t, req.ID, id)
	require.NotEqual(t, "unknown", j.State, j.Result)
	assert.NotEqual(t, "replayed", j.State, "shown replayed although the broker stored nothing (stream APP holds %d messages): %s", info.State.Msgs, j.Result)
	assert.Equal(t, "blocked", j.State, "nothing was published, and it says why")
	assert.Contains(t, j.Result, "interest retention")

	// Once a consumer takes the subject, the next request's replay is
	// stored, and replayed.
	_, err = b.target.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "search", FilterSubject: "app.acme.search.>", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	again := b.request(t, []int64{id}, replay.SubmitInput{})
	// A service of its own: its list of streams is read after the consumer
	// was made (a list is kept for its TTL: the rule's window, documented).
	fresh := replay.New(b.db.Pool, b.config(t))
	w = replay.NewWorker(fresh, b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute}, b.log)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	info, err = b.target.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.State.Msgs, "stored for the consumer that takes it")
	ja := b.job(t, again.ID, id)
	assert.Equal(t, "replayed", ja.State, ja.Result)
}
