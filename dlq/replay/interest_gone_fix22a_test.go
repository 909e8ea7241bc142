package replay_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestInterestConsumerGoneBlockedAndReplayedAgain: the fix of
// TestRevBroker22InterestConsumerGoneShownReplayed. The worker's list of
// streams names the subject's only consumer of interest stream APP, which
// is deleted before the publish: the broker acknowledges it and stores
// nothing, the worker finds no message at the PubAck's sequence, reads
// the stream's consumers afresh, and the item ends blocked (no-interest),
// its dead letter let go and not in the ledger: once a consumer takes the
// subject again, a new request replays it (after the broker's duplicate
// window of the dropped publish has passed, 1 s here: inside it, the
// replay is dropped as a duplicate and deferred).
func TestInterestConsumerGoneBlockedAndReplayedAgain(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.js.DeleteStream(ctx, "APP"))
	b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Retention: jetstream.InterestPolicy, Duplicates: time.Second})
	search := jetstream.ConsumerConfig{Durable: "search", FilterSubject: "app.acme.search.>", AckPolicy: jetstream.AckExplicitPolicy}
	_, err := b.target.CreateOrUpdateConsumer(ctx, search)
	require.NoError(t, err)

	windows := replay.NewStreamWindows(b.js, replay.DefaultWindowTTL)
	const subject = "app.acme.search.index_update"
	require.Empty(t, windows.Window(ctx, subject).NoInterest, "the search consumer takes the subject when the list is read")
	require.NoError(t, b.target.DeleteConsumer(ctx, "search"))

	id := b.seedItem(t, "search.index_update", "interest-gone-fixed", nil, `{"doc":1}`)
	cfg := b.config(t)
	cfg.Windows = windows
	w := replay.NewWorker(replay.New(b.db.Pool, cfg), b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute}, b.log)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)

	j := b.job(t, req.ID, id)
	assert.Equal(t, "blocked", j.State, j.Result)
	assert.Contains(t, j.Result, "none of them takes app.acme.search.index_update")
	assert.Contains(t, j.Result, "acknowledged the replay (APP:1) and dropped it")

	// A consumer takes the subject again: the dead letter was let go and
	// is not in the ledger, so a new request is made and replays it.
	_, err = b.target.CreateOrUpdateConsumer(ctx, search)
	require.NoError(t, err)
	again := b.request(t, []int64{id}, replay.SubmitInput{})
	w = b.worker(t, replay.WorkerConfig{}) // a list of streams read now
	wait.For(t, "the new request's replay", 30*time.Second, func() error {
		if _, err := w.RunOnce(ctx); err != nil {
			return wait.Stop(err)
		}
		ja := b.job(t, again.ID, id)
		switch ja.State {
		case "replayed":
			return nil
		case "deferred", "pending", "claimed":
			return fmt.Errorf("%w: %s: %s", wait.ErrNotYet, ja.State, ja.Result)
		}
		return wait.Stop(fmt.Errorf("%s: %s", ja.State, ja.Result))
	})
	info, err := b.target.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.State.Msgs, "stored for the consumer that takes it")
}

// TestInterestConsumerTookReplayShownReplayed: the other side of
// TestInterestConsumerGoneBlockedAndReplayedAgain. The subject's consumer
// of interest stream APP takes the replay and acks it before the worker
// judges the PubAck (a fast service), so the stream no longer holds it at
// the PubAck's sequence. Its consumers, read afresh, take the subject: the
// item is replayed, and its result says the consumer took it.
func TestInterestConsumerTookReplayShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.js.DeleteStream(ctx, "APP"))
	b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Retention: jetstream.InterestPolicy})
	cons, err := b.target.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "search", FilterSubject: "app.acme.search.>", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)

	id := b.seedItem(t, "search.index_update", "interest-consumed", nil, `{"doc":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{})
	took := make(chan error, 1)
	w.OnAck(func(_ int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		took <- consume(ctx, b.target, cons, a, err)
		return a, err
	})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.NoError(t, <-took, "the service's consumer took the replay before its PubAck was judged")

	j := b.job(t, req.ID, id)
	assert.Equal(t, "replayed", j.State, j.Result)
	assert.Contains(t, j.Result, "stream APP holds no message at 1 now, and a consumer of the stream takes the subject: it took the message")
}

// consume takes the message PubAck a names from cons and acks it, then
// waits until stream no longer holds it (an interest stream removes what
// its consumers acked).
func consume(ctx context.Context, stream jetstream.Stream, cons jetstream.Consumer, a *jetstream.PubAck, err error) error {
	if err != nil || a == nil {
		return fmt.Errorf("no PubAck: %v", err)
	}
	m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		return fmt.Errorf("take the replay: %w", err)
	}
	if err := m.DoubleAck(ctx); err != nil {
		return fmt.Errorf("ack the replay: %w", err)
	}
	return wait.Poll(10*time.Second, wait.Interval, func() error {
		_, err := stream.GetMsg(ctx, a.Sequence)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		return fmt.Errorf("%w: %s:%d still held (%v)", wait.ErrNotYet, a.Stream, a.Sequence, err)
	})
}
