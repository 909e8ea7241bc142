package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevReplay15RecreatedLateCopyShownReplayed: AGG, made after the
// original, copies the target through a link that is down, then comes
// up: the worker reads that AGG copied the original and defers the job
// until AGG's window has passed since. Meanwhile AGG is deleted and made
// again (its link down again): the new AGG has copied nothing. The
// worker remembers the first AGG's read by message id and path, which
// names AGG but not which AGG: it never reads the new one, counts its
// window from its creation, and publishes. When the new AGG's link comes
// back it copies the original, then the replay inside its window, and
// drops the replay: the item is shown replayed, AGG's consumers never
// get it.
func TestRevReplay15RecreatedLateCopyShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := rr14Original(t, b, "orig-recreated-1")
	down := jetstream.StreamConfig{Name: "AGG", Duplicates: 6 * time.Second,
		Sources: []*jetstream.StreamSource{{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}}}
	up := down
	up.Sources = []*jetstream.StreamSource{{Name: "APP"}}
	agg := b.createStream(t, down)

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	wait.Until(t, "the job to be deferred while AGG is behind", 30*time.Second, func() bool {
		return strings.Contains(b.jobsText(t, req.ID), "has not copied any message of")
	})
	_, err := b.js.UpdateStream(ctx, up) // its link is mended
	require.NoError(t, err)
	wait.Until(t, "AGG to copy the original", 30*time.Second, func() bool { return rr14Count(t, agg) == 1 })
	wait.Until(t, "the job to be deferred for AGG's window, counted from when it copied the original", 30*time.Second, func() bool {
		text := b.jobsText(t, req.ID)
		return strings.Contains(text, "deferred until") && strings.Contains(text, "stream AGG drops")
	})
	require.Zero(t, b.jobStates(t, req.ID)[string(replay.JobReplayed)], "replayed inside AGG's window: %s", b.jobsText(t, req.ID))

	// AGG is deleted and made again, its link down: the new AGG has not
	// copied the original.
	require.NoError(t, b.js.DeleteStream(ctx, "AGG"))
	agg = b.createStream(t, down)
	wait.Until(t, "the job to be replayed, or deferred while the new AGG is behind", 60*time.Second, func() bool {
		return b.jobStates(t, req.ID)[string(replay.JobReplayed)] == 1 || strings.Contains(b.jobsText(t, req.ID), "has not copied any message of")
	})
	assert.Zero(t, b.jobStates(t, req.ID)[string(replay.JobReplayed)],
		"shown replayed while AGG, made again since the read that showed the old AGG held the original, has not copied it (AGG holds %d messages of the subject): %s",
		rr14Count(t, agg), b.jobsText(t, req.ID))

	_, err = b.js.UpdateStream(ctx, up)
	require.NoError(t, err)
	r := b.waitFinished(t, req.ID)
	require.Equal(t, 1, b.jobStates(t, req.ID)[string(replay.JobReplayed)], "%s: %s", r.Status, b.jobsText(t, req.ID))
	wait.For(t, "the replay to reach AGG", 30*time.Second, func() error {
		if n := rr14Count(t, agg); n != 2 {
			return fmt.Errorf("the item is shown replayed, but AGG holds %d messages of the subject (APP %d): AGG dropped the replay as a duplicate of the original",
				n, b.onSubject(t, rr14Subject))
		}
		return nil
	})
}
