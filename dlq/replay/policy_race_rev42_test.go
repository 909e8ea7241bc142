package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev42RequestOfAPolicyActivatedJustBeforeTheClaimWaits: a worker
// checks that its policy is the active version, then another process
// activates a newer one and a request is approved under it, and the
// worker claims that request's job with the table it holds. The stale
// table is the worker's, not the request's: the job waits for a worker
// that holds the active version (this one, once its file has it) and is
// then replayed, instead of being blocked for good as approved under a
// policy that changed.
func TestRev42RequestOfAPolicyActivatedJustBeforeTheClaimWaits(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.replays.ActivatePolicy(ctx, "first"))
	id := b.seedItem(t, "search.index_update", "activated-before-claim", nil, "{}")

	newer := policyAt(t, 400)
	require.NotEqual(t, b.policy.Load().Version(), newer.Version())
	second := replay.New(b.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return newer }, Subjects: testSubjects(t)})

	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond}) // a released job is due again at once
	var req replay.Request
	w.BeforeClaim(func() {
		w.BeforeClaim(nil)
		require.NoError(t, second.ActivatePolicy(ctx, "second"))
		req = testfactory.Request(t, second, oncall, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replay.StatusApproved, req.Status)
	})
	n, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	j := b.job(t, req.ID, id)
	assert.Equal(t, "pending", j.State, "a request approved under the active version was judged by a stale table: %s", j.Result)
	assert.Equal(t, "released: the active replay policy changed since the claim judged it", j.Result)
	assert.Zero(t, b.publishedAs(t, "activated-before-claim"))

	// The worker's file reaches the new version: the job is replayed.
	b.policy.Store(newer)
	j = b.rerun(t, w, req.ID, id)
	assert.Equal(t, "replayed", j.State, j.Result)
	assert.Equal(t, 1, b.publishedAs(t, "activated-before-claim"))
}
