package replay_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev42RequestOfAPolicyActivatedJustBeforeTheClaimIsJudgedByItOrWaits: a worker
// checks that its policy is the active version, then another process
// activates a newer one and a request is approved under it, and the
// worker claims that request's job with the table it holds. The stale
// table is the worker's, not the request's: it reads its file again
// (Reload, as every process is wired). When the file has the new version,
// the job is judged by it and replayed in that claim; when not yet, the
// job waits for a worker that holds it (this one, once its file has it),
// instead of being blocked for good as approved under a policy that
// changed.
func TestRev42RequestOfAPolicyActivatedJustBeforeTheClaimIsJudgedByItOrWaits(t *testing.T) {
	t.Parallel()
	for name, fileHasIt := range map[string]bool{"FileHasTheNewVersion": true, "FileNotThereYet": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			ctx := context.Background()
			newer := policyAt(t, 400)
			require.NotEqual(t, b.policy.Load().Version(), newer.Version())
			var inForce atomic.Pointer[replaypolicy.Table]
			inForce.Store(b.policy.Load())
			cfg := b.config(t)
			cfg.Policy = inForce.Load
			cfg.Reload = func() (*replaypolicy.Table, error) { // the policy file read again
				if fileHasIt {
					inForce.Store(newer)
				}
				return inForce.Load(), nil
			}
			svc := replay.New(b.db.Pool, cfg)
			require.NoError(t, svc.ActivatePolicy(ctx, "first"))
			id := b.seedItem(t, "search.index_update", "activated-before-claim", nil, "{}")
			second := replay.New(b.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return newer }, Subjects: testSubjects(t)})

			w := replay.NewWorker(svc, b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute, Retry: time.Millisecond}, b.log)
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
			if fileHasIt {
				assert.Equal(t, "replayed", j.State, "judged by the version its file has now: %s", j.Result)
				assert.Equal(t, 1, b.publishedAs(t, "activated-before-claim"))
				return
			}
			assert.Equal(t, "pending", j.State, "a request approved under the active version was judged by a stale table: %s", j.Result)
			assert.Equal(t, "released: the active replay policy changed since the claim judged it", j.Result)
			assert.Zero(t, b.publishedAs(t, "activated-before-claim"))

			// The worker's file reaches the new version: the job is replayed.
			inForce.Store(newer)
			j = b.rerun(t, w, req.ID, id)
			assert.Equal(t, "replayed", j.State, j.Result)
			assert.Equal(t, 1, b.publishedAs(t, "activated-before-claim"))
		})
	}
}
