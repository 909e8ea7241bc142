package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRollupStreamLostPubAckNeedsReconciliation: the fix of
// TestRevReplay23RollupStreamRetryStoredTwice, seen from the first
// claim. A stream that allows rollups (allow_rollup_hdrs, purges not
// denied) evicts: a publish to it whose PubAck is lost is not retried, it
// needs reconciliation at once, and the result names the setting.
func TestRollupStreamLostPubAckNeedsReconciliation(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	o := startOwnNATS(t, b)
	st, err := o.js.CreateStream(ctx, jetstream.StreamConfig{Name: "ROLL", Subjects: []string{"events.>"}, AllowRollup: true,
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	require.NoError(t, err)
	const subject = "events.acme.search.index_update"
	id := b.seedItem(t, "search.index_update", "roll-fixed", nats.Header{dlq.HeaderOriginalSubject: {subject}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := o.worker(b, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	j := b.job(t, req.ID, id)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "allow_rollup_hdrs")
	assert.Equal(t, 1, copiesOf(t, st, "roll-fixed"), "the first publish was stored, and nothing was sent again")
}

// TestLimitsStreamWithoutRollupsRetriesLostPubAck: rollups make a stream
// volatile, not every limits stream. A file-stored limits stream limited
// by age only (no rollups, no per-subject or discard-old limits) keeps
// the ordinary lost-PubAck path: the job waits as unknown, the broker is
// restarted (its table of ids rebuilt from the stream, which still holds
// the first publish), the retry is dropped as a duplicate of the replay's
// own earlier publish, and the item is replayed, stored once.
func TestLimitsStreamWithoutRollupsRetriesLostPubAck(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	o := startOwnNATS(t, b)
	st, err := o.js.CreateStream(ctx, jetstream.StreamConfig{Name: "AGED", Subjects: []string{"events.>"}, MaxAge: time.Hour,
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	require.NoError(t, err)
	const subject = "events.acme.search.index_update"
	id := b.seedItem(t, "search.index_update", "aged-1", nats.Header{dlq.HeaderOriginalSubject: {subject}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := o.worker(b, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	first := b.job(t, req.ID, id)
	require.Equal(t, "unknown", first.State, "an ordinary lost PubAck is retried: %s", first.Result)
	require.Equal(t, 1, copiesOf(t, st, "aged-1"), "the first publish was stored")
	o.stop(t)
	o.start(t)

	j := runUntil(t, b, w, req.ID, id, "unknown", "pending", "deferred", "claimed")
	assert.Equal(t, "replayed", j.State, j.Result)
	assert.Contains(t, j.Result, "this replay's own earlier publish")
	st, err = o.js.Stream(ctx, "AGED")
	require.NoError(t, err)
	assert.Equal(t, 1, copiesOf(t, st, "aged-1"), "the retry was dropped as a duplicate (job %s: %s)", j.State, j.Result)
}
