package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevReplay18bTenantStopMissesRequestThatEndsWithProblemsMeanwhile:
// defect. The tenant's emergency stop (StopAll) selects its requests with
// one SELECT ... FOR UPDATE whose stoppable condition reads replay_jobs in
// an EXISTS for a request done with problems. Under READ COMMITTED a row
// updated while the statement waits is re-checked on its new version, but
// the EXISTS still reads the statement's snapshot: a request that was
// running when the stop began and, before the stop reached its row, ended
// done_with_problems with an item needing a person (the worker records the
// job, then finish moves the request, each committed) is re-checked as
// "done with problems, and no item needing a person" and silently dropped:
// neither stopped nor listed as left. The stop reports the tenant stopped;
// one approver then republishes the item and the request runs again.
// Here the stop waits on another request's row (any approve, settle or
// record of it holds that lock) while the worker ends the target.
func TestRevReplay18bTenantStopMissesRequestThatEndsWithProblemsMeanwhile(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()

	// Two rebuildable requests of acme, approved at submit (no approver
	// needed); no worker runs, so their jobs wait.
	first := b.request(t, []int64{b.seedItem(t, "search.index_update", "rev18b-stop-1", nil, "{}")}, replay.SubmitInput{})
	dl := b.seedItem(t, "search.index_update", "rev18b-stop-2", nil, "{}")
	target := b.request(t, []int64{dl}, replay.SubmitInput{})
	require.Less(t, first.ID, target.ID)
	require.Equal(t, replay.StatusApproved, target.Status)

	// Another transaction holds the first request's row (an approval, a
	// settle, a worker's record of it).
	hold, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = hold.Rollback(ctx) }()
	_, err = hold.Exec(ctx, `SELECT 1 FROM replay_requests WHERE id = $1 FOR UPDATE`, first.ID)
	require.NoError(t, err)

	type result struct {
		res replay.TenantStop
		err error
	}
	done := make(chan result, 1)
	go func() {
		stop := replay.StopInput{Reason: "incident 18b", Typed: replaypolicy.StopPhrase}
		res, err := b.replays.StopAll(ctx, "acme", func(replaypolicy.Class) bool { return true }, approver1, stop, quarantine.RequestMeta{})
		done <- result{res, err}
	}()
	b.waitLockWaiters(t, "the tenant stop waits for the first request's row", 1)

	// Meanwhile the worker records the target's only job as needing a
	// person and finishes the request done with problems (committed).
	testfactory.NeedsPerson(t, b.db.Pool, target.ID)
	require.NoError(t, hold.Rollback(ctx))
	got := <-done
	require.NoError(t, got.err)
	t.Logf("tenant stop: stopped %d, left %d", got.res.Stopped, len(got.res.Left))

	after, err := b.replays.Request(ctx, target.ID)
	require.NoError(t, err)
	ok, err := b.replays.CanStop(ctx, target.ID)
	require.NoError(t, err)
	assert.False(t, ok, "after the tenant's emergency stop, request %d (%s) is still one a stop would end", target.ID, after.Status)
	assert.Equal(t, replay.StatusCancelled, after.Status, "the tenant stop skipped a request whose item may still be republished")

	// One approver republishes the item of the stopped tenant.
	err = b.replays.Reconcile(ctx, target.ID, dl, approver2, replay.ReconcileInput{Choice: replaypolicy.Republish,
		Note: "the index has no entry for it"}, quarantine.RequestMeta{})
	again, rerr := b.replays.Request(ctx, target.ID)
	require.NoError(t, rerr)
	assert.Error(t, err, "a republish after the tenant's emergency stop must be refused; the request is now %s", again.Status)
	assert.NotEqual(t, replay.StatusRunning, again.Status, "the emergency-stopped tenant's request runs again")
}
