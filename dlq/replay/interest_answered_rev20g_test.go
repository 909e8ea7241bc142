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

// TestRevBroker20NewInterestStreamAckShownReplayed: a sibling of
// TestRevBroker19InterestStreamAckWithoutStoreShownReplayed. The worker's
// list of streams (kept DefaultWindowTTL, 30 s) says no stream takes the
// subject: it was read before the stream was made. An operator then makes
// the subject's stream, of interest retention, and its consumers after it
// (here: one for other subjects). A first attempt judged by the list is
// sent expecting no stream; the new stream answers with an ordinary PubAck
// naming a sequence and stores nothing (no consumer takes the subject).
// The worker reads the answering stream afresh for exactly this case
// (answeredWindow: "a stream made since the list was read"), but that
// fresh read (StreamWindows.Fresh) leaves out the interest of the
// stream's consumers, which the list's read has (Window.NoInterest): the
// item is shown replayed, its dead letter green and in the ledger, while
// the broker stored nothing and no consumer will ever receive it
// (invariant 13).
func TestRevBroker20NewInterestStreamAckShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.js.DeleteStream(ctx, "APP"))

	// The console's own reader, with its production TTL, has looked the
	// subject up (a confirm page, an earlier claim) while no stream took it.
	windows := replay.NewStreamWindows(b.js, replay.DefaultWindowTTL)
	const subject = "app.acme.search.index_update"
	require.Empty(t, windows.Window(ctx, subject).Stream, "no stream takes the subject yet")

	// The stream is made, then its consumers: none of them takes the subject yet.
	b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Retention: jetstream.InterestPolicy})
	_, err := b.target.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "orders", FilterSubject: "app.acme.orders.>", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)

	id := b.seedItem(t, "search.index_update", "interest-new-stream", nil, `{"doc":1}`)
	cfg := b.config(t)
	cfg.Windows = windows
	w := replay.NewWorker(replay.New(b.db.Pool, cfg), b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute}, b.log)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)

	info, err := b.target.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "the broker stored nothing: no consumer of APP takes the subject")
	j := b.job(t, req.ID, id)
	assert.NotEqual(t, "replayed", j.State, "shown replayed although stream APP stored nothing (it holds %d messages): %s", info.State.Msgs, j.Result)
	assert.Equal(t, "blocked", j.State, "nothing was stored, and it says why")
	assert.Contains(t, j.Result, "interest retention")
	assert.Contains(t, j.Result, "acknowledged the replay (APP:1) and dropped it")

	// Its dead letter was let go: once a consumer takes the subject, a new
	// request replays it. The broker keeps the id of the publish it
	// dropped for the stream's duplicate window, as the result says, so
	// that replay is deferred until the window has passed, not dropped
	// and shown replayed. The same worker: the fresh read found a stream
	// its list did not have, so the claim reads the list again.
	assert.Contains(t, j.Result, "keeping its message id for the stream's duplicate window (2m0s)")
	_, err = b.target.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "search", FilterSubject: "app.acme.search.>", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	again := b.request(t, []int64{id}, replay.SubmitInput{})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	ja := b.job(t, again.ID, id)
	assert.Equal(t, "deferred", ja.State, ja.Result)
	assert.Contains(t, ja.Result, "as a duplicate of APP:1")
}
