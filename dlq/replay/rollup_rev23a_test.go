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

// TestRevReplay23RollupStreamRetryStoredTwice: a sibling of
// TestEvictingLimitsStreamUnknownOutcomeNeedsReconciliation. A limits
// stream that allows rollups (allow_rollup_hdrs) removes messages before
// they age out too: any publisher's message with Nats-Rollup: sub on the
// subject purges every earlier one, the replay's among them, and a restart
// of the broker then forgets their ids (rebuildDedupe reads only what the
// store still holds). evicts() (window.go) names MaxMsgsPerSubject and
// DiscardOld limits but not AllowRollup, so Window.Volatile is "" and a
// publish whose PubAck was lost is retried: after a rollup and a restart,
// inside the duplicate window, the retry is stored again and reported
// replayed, though the first publish landed (and may have been applied):
// two effects of one approved intent (invariant 4).
func TestRevReplay23RollupStreamRetryStoredTwice(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	o := startOwnNATS(t, b)
	st, err := o.js.CreateStream(ctx, jetstream.StreamConfig{Name: "ROLL", Subjects: []string{"events.>"}, AllowRollup: true,
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	require.NoError(t, err)
	const subject = "events.acme.search.index_update"
	id := b.seedItem(t, "search.index_update", "roll-1", nats.Header{dlq.HeaderOriginalSubject: {subject}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := o.worker(b, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	first := b.job(t, req.ID, id)
	require.Equal(t, 1, copiesOf(t, st, "roll-1"), "the first publish was stored")
	t.Logf("after the lost PubAck: job %s (%s)", first.State, first.Result)

	// The subject's owner rolls the subject up (a snapshot of its state):
	// the replay's first publish is purged from the stream.
	m := nats.NewMsg(subject)
	m.Header.Set(dlq.HeaderNatsMsgID, "snapshot-1")
	m.Header.Set("Nats-Rollup", "sub")
	m.Data = []byte(`{"n":2,"snapshot":true}`)
	_, err = o.js.PublishMsg(ctx, m)
	require.NoError(t, err)
	require.Equal(t, 0, copiesOf(t, st, "roll-1"), "the rollup purged the replay")
	o.stop(t)
	o.start(t)

	j := runUntil(t, b, w, req.ID, id, "unknown", "pending", "deferred", "claimed")
	st, err = o.js.Stream(ctx, "ROLL")
	require.NoError(t, err)
	assert.Equal(t, 0, copiesOf(t, st, "roll-1"), "the retry was stored again after the first publish landed (job %s: %s)", j.State, j.Result)
	assert.Equal(t, "needs_reconciliation", j.State, "a lost PubAck on a stream that removes messages by rollup needs a person (%s)", j.Result)
}
