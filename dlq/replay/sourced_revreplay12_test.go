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

// TestRevReplay12SourcedStreamDropsReplayShownReplayed: the consumers of a
// subject read a stream that SOURCES the target stream (an aggregate
// stream; docs/replay.md says "consumers that read a copy of it (a mirror,
// or a stream that sources it) see what it stores"). A sourcing stream is
// not a mirror: it applies its own duplicate window to Nats-Msg-Id of
// what it sources (nats-server processJetStreamMsg: dedupe is skipped
// only for a mirror). The worker defers the first attempt by the target
// stream's window only, publishes under the original message id, the
// target stores it and the item is shown replayed; the sourcing stream,
// whose window still holds the original's id, drops it. The console says
// "replayed" and the consumers never receive the replay.
func TestRevReplay12SourcedStreamDropsReplayShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"

	// The target takes the subject with a short window; AGG, which the
	// consumers read, sources it with a window of a minute.
	cfg := b.target.CachedInfo().Config
	cfg.Duplicates = time.Second
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Sources: []*jetstream.StreamSource{{Name: "APP"}}, Duplicates: time.Minute})

	// The original, as its producer published it; AGG sourced it.
	orig := nats.NewMsg(subject)
	orig.Header.Set(jetstream.MsgIDHeader, "orig-sourced-1")
	orig.Data = []byte(`{"doc":"sku-1"}`)
	_, err = b.js.PublishMsg(ctx, orig)
	require.NoError(t, err)
	aggCount := func(subj string) int {
		info, err := agg.Info(ctx, jetstream.WithSubjectFilter(subj))
		require.NoError(t, err)
		return int(info.State.Subjects[subj])
	}
	wait.Until(t, "AGG to source the original", 30*time.Second, func() bool { return aggCount(subject) == 1 })

	// Its consumer gave up on it, after it was stored (its first failure
	// now, not the factory's ten minutes ago): the dead letter, replayed
	// (rebuildable). The worker waits for the target's window from then.
	id := b.seedItem(t, "search.index_update", "orig-sourced-1",
		nats.Header{dlq.HeaderFirstFailedAt: {time.Now().UTC().Format(time.RFC3339Nano)}}, `{"doc":"sku-1"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	r := b.waitFinished(t, req.ID)
	states := b.jobStates(t, req.ID)
	if states[string(replay.JobReplayed)] != 1 {
		t.Logf("not shown replayed (%s: %s): the console did not claim a delivery", r.Status, b.jobsText(t, req.ID))
		return
	}
	require.Equal(t, 2, b.onSubject(t, subject), "the target stored the replay")

	// A marker after the replay: once AGG has it, AGG has sourced
	// everything the target stored before it.
	marker := nats.NewMsg("app.acme.marker")
	marker.Header.Set(jetstream.MsgIDHeader, "marker-1")
	_, err = b.js.PublishMsg(ctx, marker)
	require.NoError(t, err)
	wait.Until(t, "AGG to source the marker", 30*time.Second, func() bool { return aggCount("app.acme.marker") == 1 })

	assert.Equal(t, 2, aggCount(subject), fmt.Sprintf("request %d shows the item replayed (%s), but the stream its consumers read "+
		"(AGG, sourcing APP with a 1m duplicate window) dropped the replay as a duplicate of the original: they never received it", req.ID, b.jobsText(t, req.ID)))
}
