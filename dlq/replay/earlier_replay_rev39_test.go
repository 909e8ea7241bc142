package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev39EarlierRequestsReplayOfTheItemIsNotPublishedAgain: request R0
// publishes dead letter A, the broker stores it and the PubAck is lost; R0
// is cancelled, its job left for a person, who settles it "not applied,
// leave it" (the consumer had not caught up yet). A new request R1 of A,
// inside the target's duplicate window, is answered Duplicate for R0's
// message. It is left for a person, and nothing more reaches the subject:
// before, it was deferred and published again once the window had passed,
// and the target applied A twice.
func TestRev39EarlierRequestsReplayOfTheItemIsNotPublishedAgain(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Minute})
	require.NoError(t, err)
	a := b.seedItem(t, "search.index_update", "rev39-earlier-replay", nil, `{"doc":7}`)
	var subject string
	r0 := b.request(t, []int64{a}, replay.SubmitInput{})
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT subject FROM replay_items WHERE request_id = $1`, r0.ID).Scan(&subject))

	w := b.worker(t, replay.WorkerConfig{Retry: time.Minute})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "unknown", b.job(t, r0.ID, a).State)
	require.Equal(t, 1, b.onSubject(t, subject), "the broker stored R0's publish")
	require.NoError(t, b.replays.Cancel(ctx, r0.ID, oncall, "wrong time", quarantine.RequestMeta{}))
	require.Equal(t, "needs_reconciliation", b.job(t, r0.ID, a).State)
	j := leftThenRequestedAgain(t, b, r0.ID, a)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "earlier replay of this dead letter")
	assert.Equal(t, 1, b.onSubject(t, subject), "R0's publish alone")
}

// TestRev39EarlierReplayTakenBeforeTheNewRequestIsNotPublishedAgain: the
// same on a work-queue target whose consumer took and acked R0's message
// (R0's lost PubAck sends it to a person at once; the person settles it
// "not applied, leave it" before the indexer applied it):
// R1's Duplicate answer names a message that can no longer be read back.
// R0's job was handed to NATS within the window, so R1's goes to a
// person, and the stream never stores A again.
func TestRev39EarlierReplayTakenBeforeTheNewRequestIsNotPublishedAgain(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.js.DeleteStream(ctx, "APP"))
	b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Retention: jetstream.WorkQueuePolicy,
		Duplicates: time.Minute})
	cons, err := b.target.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "INDEXER", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	a := b.seedItem(t, "search.index_update", "rev39-earlier-taken", nil, `{"doc":8}`)
	r0 := b.request(t, []int64{a}, replay.SubmitInput{})

	w := b.worker(t, replay.WorkerConfig{Retry: time.Minute})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	// A lost PubAck from a work-queue stream goes to a person at once
	// (TestWorkQueueTargetUnknownOutcomeNeedsReconciliation).
	require.Equal(t, "needs_reconciliation", b.job(t, r0.ID, a).State)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	require.NoError(t, err)
	taken := 0
	for m := range batch.Messages() {
		require.NoError(t, m.DoubleAck(ctx))
		taken++
	}
	require.Equal(t, 1, taken, "the indexer took R0's replay")
	j := leftThenRequestedAgain(t, b, r0.ID, a)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "another replay request handed this dead letter's replay to NATS")
	info, err := b.target.Info(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 1, info.State.LastSeq, "the stream stored A once")
}

// leftThenRequestedAgain settles request r0's job of dead letter a "not
// applied, leave it", requests a again and runs a worker until the new
// job is judged (neither waiting nor deferred), and returns that job.
func leftThenRequestedAgain(t *testing.T, b *replayBundle, r0, a int64) jobRow {
	t.Helper()
	return leftThenRequested(t, b, r0, a, a)
}

// leftThenRequested settles request r0's job of dead letter a "not
// applied, leave it", requests next (a again, or another dead letter of
// the same message) and runs a worker until its job is judged (neither
// waiting nor deferred), and returns that job.
func leftThenRequested(t *testing.T, b *replayBundle, r0, a, next int64) jobRow {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, b.replays.Reconcile(ctx, r0, a, approver1, replay.ReconcileInput{Choice: replaypolicy.NotApplied,
		Note: "the target has no effect of it yet"}, quarantine.RequestMeta{}))
	r1 := b.request(t, []int64{next}, replay.SubmitInput{Reason: "again"})
	w1 := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	wait.Until(t, "R1's job judged", time.Minute, func() bool {
		_, err := w1.RunOnce(ctx)
		require.NoError(t, err)
		s := b.job(t, r1.ID, next).State
		return s != "pending" && s != "claimed" && s != "deferred" && s != "unknown"
	})
	return b.job(t, r1.ID, next)
}
