package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRev35RollbackDoesNotReviveApprovalsOfAReplacedVersion: a policy
// change voids the approvals made under the version it replaces: the
// jobs of a request approved under v1 are blocked while v2 is active. But
// the workers compared the request's version with the active one only,
// so `console policy rollback` to v1 brought every such approval back:
// the jobs not yet due when v2 came (a long request at its rate) were
// published under rules the operators had just replaced, and the request
// ended with a hole of the items blocked meanwhile. A request approved
// before its version was last made active is now judged stale, at the
// claim and at the publish gate; one approved after the rollback runs.
func TestRev35RollbackDoesNotReviveApprovalsOfAReplacedVersion(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	older := b.policy.Load()
	require.NoError(t, b.replays.ActivatePolicy(ctx, "v1-host"))
	before := b.request(t, []int64{b.seedItem(t, "search.index_update", "rev35-rollback-before", nil, "{}")}, replay.SubmitInput{Reason: "reindex"})
	require.Equal(t, replay.StatusApproved, before.Status, "rebuildable runs on the requester's word")

	activateElsewhere(t, b, policyAt(t, 400))
	_, err := replay.AllowPolicyRollback(ctx, b.db.Pool, older.Version()[:12], 0, oncall, "the newer rates flooded the index")
	require.NoError(t, err)
	require.NoError(t, b.replays.ActivatePolicy(ctx, "v1-rollback"))
	var active string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT version FROM replay_policy_active`).Scan(&active))
	require.Equal(t, older.Version(), active, "the rollback took")
	after := b.request(t, []int64{b.seedItem(t, "search.index_update", "rev35-rollback-after", nil, "{}")}, replay.SubmitInput{Reason: "reindex again"})
	require.Equal(t, replay.StatusApproved, after.Status)

	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitFinished(t, before.ID)
	b.waitFinished(t, after.ID)
	assert.Equal(t, map[string]int{string(replay.JobBlocked): 1}, b.jobStates(t, before.ID),
		"the approval made before v2 replaced v1 came back with the rollback: %s", b.jobsText(t, before.ID))
	assert.Contains(t, b.jobsText(t, before.ID), "the replay policy changed since approval")
	assert.Equal(t, map[string]int{string(replay.JobReplayed): 1}, b.jobStates(t, after.ID),
		"a request approved under the rolled-back version after the rollback runs: %s", b.jobsText(t, after.ID))
	info, err := b.target.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.State.Msgs, "only the request approved after the rollback was published")
}

// TestRev35ApprovalUnderAFreshActivationIsNotStale: whether a version was
// replaced since an approval was first judged by time: another version
// activated after the approval. An approval is dated by the console's
// clock (never after the database's), so a console whose clock was ten
// minutes behind dated a request approved under version B before A's
// activation of a minute earlier, and its jobs were blocked as if B had
// been replaced since. The approval now records the activation it was
// given under (policy_activated_at), and only a later activation of its
// own version (a rollback) makes it stale.
func TestRev35ApprovalUnderAFreshActivationIsNotStale(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	activateElsewhere(t, b, policyAt(t, 400))
	require.NoError(t, b.replays.ActivatePolicy(ctx, "b-host"))
	behind := time.Now().Add(-10 * time.Minute) // served by a replica whose clock is ten minutes behind
	b.now.Store(&behind)
	id := b.seedItem(t, "email.send", "rev35-fresh", nats.Header{dlq.HeaderOperationID: {"op-rev35-fresh"}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the mail relay was down"})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	approving := behind.Add(time.Second) // the approval comes after the request
	b.now.Store(&approving)
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready, d.Reason)
	b.now.Store(nil)
	var stamped bool
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT policy_activated_at IS NOT NULL FROM replay_requests WHERE id = $1`, req.ID).Scan(&stamped))
	assert.True(t, stamped, "the approval records the activation it was given under")

	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitFinished(t, req.ID)
	assert.Equal(t, map[string]int{string(replay.JobReplayed): 1}, b.jobStates(t, req.ID),
		"blocked as if its policy had changed since approval: %s", b.jobsText(t, req.ID))
}

// TestRev35RollbackBetweenClaimAndPublishPublishesNothing: the gate half of
// TestRev35RollbackDoesNotReviveApprovalsOfAReplacedVersion. A worker
// claims and judges a job of a request approved under v1 while v1 is
// active; before its publish gate, another process activates v2 and an
// operator rolls back to v1. The active version is the request's again,
// but its approval was voided by the change: the gate publishes nothing,
// and the next claim blocks the job.
func TestRev35RollbackBetweenClaimAndPublishPublishesNothing(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	older := b.policy.Load()
	require.NoError(t, b.replays.ActivatePolicy(ctx, "v1-host"))
	id := b.seedItem(t, "search.index_update", "rev35-mid-rollback", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "reindex"})
	require.Equal(t, replay.StatusApproved, req.Status)

	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond}) // a released job is due again at once
	rolledBack := false
	w.AfterJudge(func() {
		if rolledBack {
			return
		}
		rolledBack = true
		activateElsewhere(t, b, policyAt(t, 400))
		_, err := replay.AllowPolicyRollback(ctx, b.db.Pool, older.Version()[:12], 0, oncall, "the newer rates flooded the index")
		require.NoError(t, err)
		require.NoError(t, b.replays.ActivatePolicy(ctx, "v1-rollback"))
	})
	n, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.True(t, rolledBack)
	assert.Zero(t, b.publishedAs(t, "rev35-mid-rollback"), "judged before the rollback, published after it")
	j := b.job(t, req.ID, id)
	assert.Equal(t, "pending", j.State, j.Result)
	assert.Equal(t, "released: the active replay policy changed since the claim judged it", j.Result)

	j = b.rerun(t, w, req.ID, id)
	assert.Equal(t, "blocked", j.State)
	assert.Equal(t, "the replay policy changed since approval; request again", j.Result)
	assert.Zero(t, b.publishedAs(t, "rev35-mid-rollback"))
}
