package replay_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRestartOfAnOlderReplicaKeepsTheNewerPolicy (review rev-ops): two
// replicas, one deployed with the newer policy file (it activated it) and
// one still on the older file (a replica of the old ReplicaSet, or a
// `console worker` whose config was not rolled). The older one crashes and
// restarts, as app.newReplayParts starts every process: ActivatePolicy,
// then VoidStale. A restart is not a deploy, yet it makes the older
// version active again: the newer replica's pending request is voided, and
// the older replica's worker claims the request approved under the newer
// rules and blocks it ("the policy changed"). Each crash of a stale
// process flips the active version and destroys approvals.
func TestRestartOfAnOlderReplicaKeepsTheNewerPolicy(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	older := b.policy.Load()
	newer := policyAt(t, 400)
	require.NotEqual(t, older.Version(), newer.Version())

	oldCfg := b.config(t)
	oldCfg.Policy = func() *replaypolicy.Table { return older }
	oldCfg.Reload = func() (*replaypolicy.Table, error) { return older, nil } // its file still holds the older table
	newCfg := b.config(t)
	newCfg.Policy = func() *replaypolicy.Table { return newer }
	oldReplica, newReplica := replay.New(b.db.Pool, oldCfg), replay.New(b.db.Pool, newCfg)
	require.NoError(t, oldReplica.ActivatePolicy(ctx, "old-replica"))
	require.NoError(t, newReplica.ActivatePolicy(ctx, "deploy")) // the rollout: newer is active

	approved := testfactory.Request(t, newReplica, oncall, []int64{b.seedItem(t, "search.index_update", "revops-approved", nil, "{}")}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, approved.Status)
	pending := testfactory.Request(t, newReplica, oncall, []int64{b.seedItem(t, "email.send", "revops-pending",
		nats.Header{dlq.HeaderOperationID: {"op-revops"}}, "{}")}, replay.SubmitInput{})
	require.NotEqual(t, replay.StatusApproved, pending.Status, "same_operation waits for an approver")

	// The old replica crash-restarts with its unchanged file.
	require.NoError(t, oldReplica.ActivatePolicy(ctx, "old-replica-restarted"))
	voided, err := oldReplica.VoidStale(ctx)
	require.NoError(t, err)
	var active string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT version FROM replay_policy_active`).Scan(&active))
	assert.Equal(t, newer.Version(), active, "a restart of a process with an older file made the older policy active again")
	assert.Zero(t, voided, "the restart voided requests made under the newer policy")

	w := replay.NewWorker(oldReplica, b.js, b.auth, nil, replay.WorkerConfig{}, b.log)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	assert.Zero(t, b.jobStates(t, approved.ID)["blocked"], "the restarted older replica blocked a request approved under the newer policy")
}
