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

// TestRevBroker23StreamTurnedInterestShownReplayed: a sibling of
// TestRevBroker22InterestConsumerGoneShownReplayed that round 22's fix
// (rereadWindow's listedInterest/interestAnswer) does not cover. JetStream
// lets a stream's retention change between limits and interest on update
// (only to/from workqueue is refused). The worker's list of streams (kept
// DefaultWindowTTL, 30 s) is read while the target is a limits stream; the
// operator then switches it to interest retention, no consumer of it
// taking the subject. The claim judges the first attempt by the list
// (retention "limits": no NoInterest), the broker answers an ordinary
// PubAck and stores nothing, and rereadWindow re-reads only an answer from
// a stream the claim's window names as interest (listedInterest): the
// item is shown replayed, its dead letter let go, though nothing was
// stored (invariant 13).
func TestRevBroker23StreamTurnedInterestShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.js.DeleteStream(ctx, "APP"))
	b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}})

	windows := replay.NewStreamWindows(b.js, replay.DefaultWindowTTL)
	const subject = "app.acme.search.index_update"
	listed := windows.Window(ctx, subject)
	require.Equal(t, "APP", listed.Stream)
	require.Equal(t, "limits", listed.Retention)

	// Seconds later the operator makes APP an interest stream (its
	// consumers come later, or take other subjects).
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Retention: jetstream.InterestPolicy})
	require.NoError(t, err)
	now, err := b.js.Stream(ctx, "APP")
	require.NoError(t, err)
	require.Equal(t, jetstream.InterestPolicy, now.CachedInfo().Config.Retention, "the broker changed the retention")

	id := b.seedItem(t, "search.index_update", "turned-interest", nil, `{"doc":1}`)
	cfg := b.config(t)
	cfg.Windows = windows
	w := replay.NewWorker(replay.New(b.db.Pool, cfg), b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute}, b.log)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)

	info, err := b.target.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "the broker stored nothing: APP keeps messages only for its consumers, and it has none")
	j := b.job(t, req.ID, id)
	require.NotEqual(t, "claimed", j.State, j.Result)
	assert.NotEqual(t, "replayed", j.State, "shown replayed although stream APP stored nothing (it holds %d messages, last seq %d): %s",
		info.State.Msgs, info.State.LastSeq, j.Result)
}
