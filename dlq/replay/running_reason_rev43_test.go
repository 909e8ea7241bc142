package replay_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRev43RunningReasonSaysItStarted: a request's move to running was
// logged as "a publish of dead letter 5 (job 14) may have landed", which
// read as an alarm on a request that ran as asked. All the move knows is
// that a publish of that job was attempted and nothing said it did not
// land; the reason says that it started, and with which attempt.
func TestRev43RunningReasonSaysItStarted(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	id := b.seedItem(t, "search.index_update", "rev43-running", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status, "rebuildable needs no approver")
	run(t, b.worker(t, replay.WorkerConfig{Owner: "w-rev43"}))
	require.Equal(t, replay.StatusDone, b.waitFinished(t, req.ID).Status, b.jobsText(t, req.ID))

	running := ofAction(b.requestRows(t, req.ID), actionRunning)
	require.Len(t, running, 1)
	job, ok := running[0].After["job"].(float64)
	require.True(t, ok, "after names the job: %v", running[0].After)
	assert.Equal(t, fmt.Sprintf("started: its first publish attempt was of dead letter %d (job %d)", id, int64(job)), running[0].Reason)
	assert.NotContains(t, running[0].Reason, "may have landed")
}
