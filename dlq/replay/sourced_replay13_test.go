package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevReplay13CopyMadeAfterOriginalDropsReplayShownReplayed: round 12
// made a first attempt wait for the longest duplicate window of the target
// and of every stream that copies it (replaypolicy.Window.Holds), but it
// counts that wait from when the TARGET stored the original (StoredBy).
// A stream that sources the target holds the original's id from when IT
// stored its copy, which is later: a sourcing stream created (or a source
// added, or a source link that was down catching up) after the original
// copies the target's history then, and its window holds the id from
// then. Here the consumers' stream AGG is created 4 s after the original,
// sourcing APP from its start with a 6 s window: it holds the original's
// id until ~T0+10 s. The worker waits until StoredBy + 6 s + margin
// (~T0+6 s), publishes, APP stores the replay (its own window is 1 s) and
// the item is shown "replayed"; AGG drops it as a duplicate and its
// consumers never receive it: here an indexer moved to read AGG (new
// messages only: it must not redo what APP's consumers did) waits for the
// replay that fixes the dead letter and never gets it.
//
// docs/replay.md (The duplicate window) lists "a copy that sources the
// target late by more than REPLAY_WINDOW_MARGIN" among what is not seen,
// but a copy CREATED after the original is plain in the list the worker
// already reads (its Created): a copy's window should count from the later
// of StoredBy and the copy's creation (and a Duplicate's deferral from the
// later of the kept message's time and it), or the copy read back after a
// first attempt's PubAck.
func TestRevReplay13CopyMadeAfterOriginalDropsReplayShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	cfg := b.target.CachedInfo().Config
	cfg.Duplicates = time.Second
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	// The original, as its producer published it, and its consumer's
	// give-up right after (its first failure now).
	orig := nats.NewMsg(subject)
	orig.Header.Set(jetstream.MsgIDHeader, "orig-late-copy-1")
	orig.Data = []byte(`{"doc":"sku-1"}`)
	_, err = b.js.PublishMsg(ctx, orig)
	require.NoError(t, err)
	storedAt := time.Now()
	id := b.seedItem(t, "search.index_update", "orig-late-copy-1",
		nats.Header{dlq.HeaderFirstFailedAt: {storedAt.UTC().Format(time.RFC3339Nano)}}, `{"doc":"sku-1"}`)

	// Four seconds later the team adds AGG, the stream its consumers read
	// from now on: it sources APP from its first message, so it copies
	// the original now, and its 6 s window holds the id from now.
	wait.Until(t, "four seconds to pass since the original was stored", 10*time.Second, func() bool { return time.Since(storedAt) > 4*time.Second })
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Sources: []*jetstream.StreamSource{{Name: "APP"}}, Duplicates: 6 * time.Second})
	aggCount := func(subj string) int {
		info, err := agg.Info(ctx, jetstream.WithSubjectFilter(subj))
		require.NoError(t, err)
		return int(info.State.Subjects[subj])
	}
	wait.Until(t, "AGG to source the original", 30*time.Second, func() bool { return aggCount(subject) == 1 })
	copy, err := agg.GetLastMsgForSubject(ctx, subject)
	require.NoError(t, err)
	// The indexer reads AGG from here on, new messages only.
	indexer, err := agg.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "indexer", FilterSubject: subject,
		DeliverPolicy: jetstream.DeliverNewPolicy, AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	r := b.waitFinished(t, req.ID)
	states := b.jobStates(t, req.ID)
	require.Equal(t, 1, states[string(replay.JobReplayed)], "the item is shown replayed (%s: %s)", r.Status, b.jobsText(t, req.ID))
	require.Equal(t, 2, b.onSubject(t, subject), "APP stored the replay")
	replayed, err := b.target.GetLastMsgForSubject(ctx, subject)
	require.NoError(t, err)
	if gap := replayed.Time.Sub(copy.Time); gap >= 6*time.Second {
		t.Logf("APP stored the replay %s after AGG copied the original, past AGG's window", gap)
	}

	// A marker after the replay: once AGG has it, AGG has sourced
	// everything APP stored before it.
	marker := nats.NewMsg("app.acme.marker")
	marker.Header.Set(jetstream.MsgIDHeader, "marker-1")
	_, err = b.js.PublishMsg(ctx, marker)
	require.NoError(t, err)
	wait.Until(t, "AGG to source the marker", 30*time.Second, func() bool { return aggCount("app.acme.marker") == 1 })

	info, err := indexer.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.NumPending, "the indexer, which reads AGG, has the replay to process")
	assert.Equal(t, 2, aggCount(subject), fmt.Sprintf("request %d shows the item replayed (%s), but AGG, the stream its consumers read, "+
		"copied the original 4 s after APP stored it and its 6 s window still held the id when the worker published (it waited 6 s from APP's copy): "+
		"AGG dropped the replay as a duplicate and the consumers never received it", req.ID, b.jobsText(t, req.ID)))
}

// TestRevReplay13CopyWaitHasNoBrokerBackstop: for the target's own window
// a first attempt made too early is harmless: the broker answers Duplicate
// and the worker defers from the kept message's time (the broker's
// clock). For a copy's window (round 12) nothing answers: the target
// stores the replay, the copy drops it, and the item is shown replayed.
// So the wait for a copy rests wholly on StoredBy, which is the dead
// letter's Dlq-First-Failed-At when that is earlier than when it was
// stored: a value from the failing consumer's host clock (or anyone who
// can publish to the DLQ subject). Here the consumers read AGG, which
// sources APP (AGG exists before the original, so no lag), one of them
// fails on the original, and its host's clock is 4 s behind (beyond the
// margin). The worker waits 6 s from that time, APP (1 s) stores the
// replay, AGG (6 s, counting from the real time) drops it: the consumer
// that failed never gets the replay that was meant to fix it, and the
// console says replayed. Fix: when Holds is a copy's window, check the
// copy after the first attempt's PubAck (the copy's source caught up past
// the replay's sequence, and the copy holds the replay: tagged, as
// OursKept reads one), and say needs reconciliation (not replayed) when
// it does not; or do not let a header-supplied time shorten a copy's wait
// (count it from the dead letter's stored time).
func TestRevReplay13CopyWaitHasNoBrokerBackstop(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	cfg := b.target.CachedInfo().Config
	cfg.Duplicates = time.Second
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Sources: []*jetstream.StreamSource{{Name: "APP"}}, Duplicates: 6 * time.Second})
	indexer, err := agg.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "indexer", FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)

	orig := nats.NewMsg(subject)
	orig.Header.Set(jetstream.MsgIDHeader, "orig-skew-1")
	orig.Data = []byte(`{"doc":"sku-1"}`)
	_, err = b.js.PublishMsg(ctx, orig)
	require.NoError(t, err)
	aggCount := func(subj string) int {
		info, err := agg.Info(ctx, jetstream.WithSubjectFilter(subj))
		require.NoError(t, err)
		return int(info.State.Subjects[subj])
	}
	wait.Until(t, "AGG to source the original", 30*time.Second, func() bool { return aggCount(subject) == 1 })
	copy, err := agg.GetLastMsgForSubject(ctx, subject)
	require.NoError(t, err)

	// The indexer takes the original and fails on it (its give-up is the
	// dead letter); its host's clock is 4 s behind.
	batch, err := indexer.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	require.NoError(t, err)
	for m := range batch.Messages() {
		require.NoError(t, m.Term())
	}
	require.NoError(t, batch.Error())
	id := b.seedItem(t, "search.index_update", "orig-skew-1",
		nats.Header{dlq.HeaderFirstFailedAt: {time.Now().Add(-4 * time.Second).UTC().Format(time.RFC3339Nano)}}, `{"doc":"sku-1"}`)

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	r := b.waitFinished(t, req.ID)
	states := b.jobStates(t, req.ID)
	require.Equal(t, 1, states[string(replay.JobReplayed)], "the item is shown replayed (%s: %s)", r.Status, b.jobsText(t, req.ID))
	require.Equal(t, 2, b.onSubject(t, subject), "APP stored the replay")
	replayed, err := b.target.GetLastMsgForSubject(ctx, subject)
	require.NoError(t, err)
	if gap := replayed.Time.Sub(copy.Time); gap >= 6*time.Second {
		t.Logf("APP stored the replay %s after AGG copied the original, past AGG's window", gap)
	}

	marker := nats.NewMsg("app.acme.marker")
	marker.Header.Set(jetstream.MsgIDHeader, "marker-skew-1")
	_, err = b.js.PublishMsg(ctx, marker)
	require.NoError(t, err)
	wait.Until(t, "AGG to source the marker", 30*time.Second, func() bool { return aggCount("app.acme.marker") == 1 })

	info, err := indexer.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.NumPending, "the indexer, whose failure the replay fixes, has the replay to process")
	assert.Equal(t, 2, aggCount(subject), fmt.Sprintf("request %d shows the item replayed (%s), but AGG (6 s window, sourcing APP), the stream the consumer "+
		"that failed reads, dropped the replay: the worker waited from the consumer's Dlq-First-Failed-At, 4 s behind, and nothing told it that AGG dropped it",
		req.ID, b.jobsText(t, req.ID)))
}
