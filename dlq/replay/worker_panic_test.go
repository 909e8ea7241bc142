package replay_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestWorkerPanicLeavesTheClaimAsACrashWould: a bug that panics while a
// claim is executed (here, in the hook after the rules judged it) ends
// neither the worker nor the process it runs in (the console's pages and
// ingest with it): Run goes on, the claim's job is taken over once its
// lease ends, and the item is published once.
func TestWorkerPanicLeavesTheClaimAsACrashWould(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	id := b.seedItem(t, "search.index_update", "panics-once", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	w := b.worker(t, replay.WorkerConfig{Lease: 2 * time.Second, Poll: 20 * time.Millisecond})
	var judged atomic.Int32
	w.AfterJudge(func() {
		if judged.Add(1) == 1 {
			panic("a bug met on this claim's data")
		}
	})
	run(t, w)

	b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Equal(t, 1, b.publishedAs(t, "panics-once"), "published once, by the claim after the one that panicked")
	assert.GreaterOrEqual(t, judged.Load(), int32(2), "the worker claimed again after the panic")
	assert.Equal(t, "replayed", b.job(t, req.ID, id).State)
}
