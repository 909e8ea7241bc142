package replay_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevReplay25CancelAfterClaimPublishesNothing: a request cancelled
// after a worker claimed and judged its job, before the job's turn to
// publish, publishes nothing: the publish gate (gateJobs) reads the
// request's status in the statement that reserves the slot ("a cancelled
// or stopped request publishes nothing more"). The worker's own re-read
// of the status (halts) runs only when recheckAfter has passed since the
// gate read it, so the gate is the one check at this moment; with its
// status condition removed, every Cancel and Stop test passed.
func TestRevReplay25CancelAfterClaimPublishesNothing(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := t.Context()
	id := b.seedItem(t, "search.index_update", "doc-cancel-claimed", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	w := b.worker(t, replay.WorkerConfig{Owner: "w"})
	jobs, err := w.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	w.Judge(ctx, jobs)

	require.NoError(t, b.replays.Cancel(ctx, req.ID, oncall, "wrong target", quarantine.RequestMeta{}))
	w.Publish(ctx, jobs, time.Now().Add(time.Minute))
	require.NoError(t, w.Record(ctx, jobs))

	assert.Zero(t, b.onSubject(t, "app.acme.search.index_update"), "a cancelled request published")
	assert.NotContains(t, b.jobStates(t, req.ID), "replayed")
}
