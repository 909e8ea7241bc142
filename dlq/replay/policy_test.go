package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestPolicyRollbackIsDeliberate: a version replaced since it was active
// is not made active again by a process that starts with its file; that
// process says it is stale (PolicyStanding, the metric, its refusals name
// both versions and who made the active one so). Clearing the version's
// superseded_at (the runbook's rollback) lets the next start activate it,
// audited as a rollback, and from then on the newer version is the one a
// restart does not take back. A version never active before is a deploy.
func TestPolicyRollbackIsDeliberate(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	older := b.policy.Load()
	newer, newest := policyAt(t, 400), policyAt(t, 300)
	service := func(table *replaypolicy.Table) *replay.Service {
		cfg := b.config(t)
		cfg.Policy = func() *replaypolicy.Table { return table }
		return replay.New(b.db.Pool, cfg)
	}
	oldReplica, newReplica := service(older), service(newer)
	active := func() string {
		var v string
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT version FROM replay_policy_active`).Scan(&v))
		return v
	}
	stale := func(s *replay.Service) float64 { return testutil.ToFloat64(replay.NewPolicyCollector(s, b.log)) }

	require.NoError(t, oldReplica.ActivatePolicy(ctx, "old-host-1"))
	require.NoError(t, newReplica.ActivatePolicy(ctx, "new-host-7"))
	require.NoError(t, oldReplica.ActivatePolicy(ctx, "old-host-1-restarted"))
	assert.Equal(t, newer.Version(), active(), "a restart is not a deploy")
	assert.Equal(t, 2, countAudit(t, b, audit.ActionReplayPolicy), "nothing activated, nothing audited")

	st, err := oldReplica.PolicyStanding(ctx)
	require.NoError(t, err)
	assert.True(t, st.Stale())
	assert.Equal(t, "new-host-7", st.Active.ActivatedBy)
	assert.Equal(t, 1.0, stale(oldReplica))
	assert.Equal(t, 0.0, stale(newReplica))
	batch, _ := testfactory.Draft(t, newReplica, oncall, b.seedItem(t, "search.index_update", "rollback-refused", nil, "{}"))
	_, err = oldReplica.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "older"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	for _, want := range []string{older.Version()[:12], newer.Version()[:12], "activated by new-host-7"} {
		assert.ErrorContains(t, err, want)
	}

	pending := testfactory.Request(t, newReplica, oncall, []int64{b.seedItem(t, "email.send", "rollback-pending",
		nats.Header{dlq.HeaderOperationID: {"op-rollback"}}, "{}")}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, pending.Status)

	// The rollback, as the runbook says, then a start with the older file.
	// Clearing superseded_at by hand, the runbook's way before migration
	// 0033, is refused: it would be a permission without end.
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_policy_versions SET superseded_at = NULL WHERE version = $1`, older.Version())
	require.Error(t, err, "one version in force")
	_, err = replay.AllowPolicyRollback(ctx, b.db.Pool, older.Version()[:12], 0, oncall, "the newer rule blocked refunds")
	require.NoError(t, err)
	require.NoError(t, oldReplica.ActivatePolicy(ctx, "old-host-1-rollback"))
	assert.Equal(t, older.Version(), active())
	var rollback bool
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT (after->>'rollback')::boolean FROM audit_log
        WHERE action = $1 ORDER BY seq DESC LIMIT 1`, audit.ActionReplayPolicy).Scan(&rollback))
	assert.True(t, rollback, "the audit row says it was a rollback")
	voided, err := oldReplica.VoidStale(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, voided, "the request and the draft made under the version rolled back are void")
	assert.Equal(t, replay.StatusVoid, b.waitStatus(t, pending.ID, replay.StatusVoid).Status)

	require.NoError(t, newReplica.ActivatePolicy(ctx, "new-host-7-restarted"))
	assert.Equal(t, older.Version(), active(), "the rollback stays: the newer version was replaced too")
	assert.Equal(t, 1.0, stale(newReplica))

	require.NoError(t, service(newest).ActivatePolicy(ctx, "newest-host-2"))
	assert.Equal(t, newest.Version(), active(), "a version never active before is a deploy")
}

// TestVoidStaleReadsTheActiveVersionInItsTransaction: VoidStale reads the
// active version in the transaction that voids, under the lock an
// activation takes: an activation that comes after the read waits until
// the voids commit, so no request is judged against a version that was
// no longer active when it was voided.
func TestVoidStaleReadsTheActiveVersionInItsTransaction(t *testing.T) {
	t.Parallel()
	b := setupPolicies(t, 2)
	ctx := context.Background()
	require.NoError(t, b.replays.ActivatePolicy(ctx, "first"))
	pending := b.request(t, []int64{b.seedItem(t, "email.send", "void-stale-in-tx",
		nats.Header{dlq.HeaderOperationID: {"op-void-stale"}}, "{}")}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, pending.Status)
	cfg := b.config(t)
	cfg.Policy = func() *replaypolicy.Table { return b.tables[1] }
	deploy := replay.New(b.db.Pool, cfg)

	activated := make(chan error, 1)
	waited := false
	b.replays.AfterStaleRead(func() {
		go func() { activated <- deploy.ActivatePolicy(ctx, "deploy") }()
		// The activation runs until it ends or waits for a lock on
		// replay_policy_active.
		wait.Until(t, "the activation to end or wait for the policy lock", 10*time.Second, func() bool {
			if len(activated) > 0 {
				return true
			}
			var waiting int
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                WHERE c.relname = 'replay_policy_active' AND NOT l.granted
                  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting))
			waited = waiting > 0
			return waited
		})
	})
	voided, err := b.replays.VoidStale(ctx)
	require.NoError(t, err)
	b.replays.AfterStaleRead(nil)
	assert.True(t, waited, "the activation committed between VoidStale's read of the active version and its voids")
	require.NoError(t, <-activated)
	assert.Equal(t, 1, b.active(t))
	assert.Zero(t, voided, "the request was made under the version active when the voids committed")

	// The deploy's own VoidStale, after its activation, voids it.
	voided, err = deploy.VoidStale(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, voided)
	assert.Equal(t, replay.StatusVoid, b.waitStatus(t, pending.ID, replay.StatusVoid).Status)
}
