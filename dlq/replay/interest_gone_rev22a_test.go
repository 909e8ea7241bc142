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

// TestRevBroker22InterestConsumerGoneShownReplayed: a sibling of
// TestRevBroker19InterestStreamAckWithoutStoreShownReplayed and
// TestRevBroker20NewInterestStreamAckShownReplayed, the other direction of
// the list's age. The target stream has interest retention and the
// service's consumer takes the subject when the worker's list of streams
// (kept DefaultWindowTTL, 30 s) is read. The consumer then goes (the
// service is redeployed under a new durable name, an ephemeral consumer
// passes its InactiveThreshold, an operator removes it) before the
// publish, inside the list's TTL. The claim judges the first attempt by
// the list (JudgeWindow: interest present), the broker answers an
// ordinary PubAck naming a sequence and stores nothing (no consumer takes
// the subject), and JudgeAck takes the list's window for the answer
// (rereadWindow returns at once for a first attempt stored as new): the
// item is shown replayed, its dead letter green and in the ledger, while
// no consumer will ever receive it (invariant 13). A consumer made since
// the list is the safe direction (blocked until the list is read again);
// a consumer gone since is not.
func TestRevBroker22InterestConsumerGoneShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.js.DeleteStream(ctx, "APP"))
	b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Retention: jetstream.InterestPolicy})
	_, err := b.target.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "orders", FilterSubject: "app.acme.orders.>", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	_, err = b.target.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "search", FilterSubject: "app.acme.search.>", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)

	// The console's reader, with its production TTL, reads the list while
	// the search consumer takes the subject (a confirm page, an earlier
	// claim of the same subject).
	windows := replay.NewStreamWindows(b.js, replay.DefaultWindowTTL)
	const subject = "app.acme.search.index_update"
	listed := windows.Window(ctx, subject)
	require.Equal(t, "APP", listed.Stream)
	require.Empty(t, listed.NoInterest, "the search consumer takes the subject when the list is read")

	// The service's consumer goes, seconds later.
	require.NoError(t, b.target.DeleteConsumer(ctx, "search"))

	id := b.seedItem(t, "search.index_update", "interest-consumer-gone", nil, `{"doc":1}`)
	cfg := b.config(t)
	cfg.Windows = windows
	w := replay.NewWorker(replay.New(b.db.Pool, cfg), b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute}, b.log)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)

	info, err := b.target.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "the broker stored nothing: no consumer of APP takes the subject any more")
	j := b.job(t, req.ID, id)
	require.NotEqual(t, "claimed", j.State, j.Result)
	assert.NotEqual(t, "replayed", j.State, "shown replayed although stream APP stored nothing (it holds %d messages, last seq %d): %s",
		info.State.Msgs, info.State.LastSeq, j.Result)
}
