package replay_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// policies is a replay bundle with tables of its own and a service per
// table, as processes started with their files.
type policies struct {
	*replayBundle
	tables []*replaypolicy.Table // tables[0] is the bundle's; each other a new version
}

// setupPolicies returns a replay bundle and n tables: the bundle's and
// n-1 versions of dev/policy.toml with another default_rate.
func setupPolicies(t *testing.T, n int) *policies {
	b := &policies{replayBundle: setupReplay(t)}
	src, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	b.tables = []*replaypolicy.Table{b.policy.Load()}
	for i := 1; i < n; i++ {
		rate := fmt.Sprintf("default_rate = %d", 500-50*i)
		tbl, err := replaypolicy.Parse(fmt.Sprintf("v%d.toml", i), []byte(strings.Replace(string(src), "default_rate = 500", rate, 1)))
		require.NoError(t, err)
		b.tables = append(b.tables, tbl)
	}
	return b
}

// start is a process started with table i's file, as process.
func (b *policies) start(t *testing.T, i int, process string) *replay.Service {
	t.Helper()
	cfg := b.config(t)
	cfg.Policy = func() *replaypolicy.Table { return b.tables[i] }
	s := replay.New(b.db.Pool, cfg)
	require.NoError(t, s.ActivatePolicy(context.Background(), process))
	return s
}

// active is the index of the active table.
func (b *policies) active(t *testing.T) int {
	t.Helper()
	var v string
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT version FROM replay_policy_active`).Scan(&v))
	for i, tbl := range b.tables {
		if tbl.Version() == v {
			return i
		}
	}
	t.Fatalf("active version %s is none of the tables", v)
	return -1
}

// allow lets table i back for d (0: the default).
func (b *policies) allow(t *testing.T, i int, d time.Duration) replay.PolicyRollback {
	t.Helper()
	r, err := replay.AllowPolicyRollback(context.Background(), b.db.Pool, b.tables[i].Version()[:12], d, oncall, "the newer rule blocked refunds")
	require.NoError(t, err)
	return r
}

// rollback is the last rollback allowance.
func (b *policies) rollback(t *testing.T) *replay.PolicyRollback {
	t.Helper()
	return lastRollback(t, b.db.Pool)
}

// lastRollback is the last rollback allowance in the database of pool.
func lastRollback(t *testing.T, pool *pgxpool.Pool) *replay.PolicyRollback {
	t.Helper()
	_, r, err := replay.PolicyStatus(context.Background(), pool)
	require.NoError(t, err)
	require.NotNil(t, r)
	return r
}

// TestRollbackAllowanceExpires: an allowance nobody used expires (an hour
// by default, --for within a minute and a day); a start with the version's
// file after that is refused like any restart of an older replica, and
// the process says the allowance expired and which command to run again.
// Allowed again, the next start activates it.
func TestRollbackAllowanceExpires(t *testing.T) {
	t.Parallel()
	b := setupPolicies(t, 2)
	ctx := context.Background()
	b.start(t, 0, "old-host")
	b.start(t, 1, "deploy")

	for _, d := range []time.Duration{30 * time.Second, 25 * time.Hour} {
		_, err := replay.AllowPolicyRollback(ctx, b.db.Pool, b.tables[0].Version(), d, oncall, "x")
		assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%s: %v", d, err)
	}
	r := b.allow(t, 0, 0)
	assert.Equal(t, replay.DefaultRollbackFor, r.ExpiresAt.Sub(r.AllowedAt))
	st := b.rollback(t)
	assert.True(t, st.Pending())
	assert.Equal(t, r.ExpiresAt, st.ExpiresAt)

	// Two hours pass.
	_, err := b.db.Pool.Exec(ctx, `UPDATE replay_policy_rollback SET allowed_at = allowed_at - interval '2 hours', expires_at = expires_at - interval '2 hours'`)
	require.NoError(t, err)
	old := b.start(t, 0, "old-host-restarted-months-later")
	assert.Equal(t, 1, b.active(t), "an expired allowance activates nothing")
	standing, err := old.PolicyStanding(ctx)
	require.NoError(t, err)
	require.True(t, standing.Stale())
	assert.True(t, standing.Rollback.Expired)
	assert.False(t, standing.Rollback.Pending())
	hint := standing.RollbackHint()
	assert.Contains(t, hint, "expired unused")
	assert.Contains(t, hint, "console policy rollback --to "+b.tables[0].Version()[:12])

	b.allow(t, 0, 10*time.Minute)
	b.start(t, 0, "rollback")
	assert.Equal(t, 0, b.active(t), "allowed again, the next start goes back")
}

// TestRollbackAllowanceIsUsedOnce: the start that goes back uses the
// allowance (its audit row names it); after another deploy replaced the
// version again, a restart with its file does not take it back.
func TestRollbackAllowanceIsUsedOnce(t *testing.T) {
	t.Parallel()
	b := setupPolicies(t, 3)
	ctx := context.Background()
	b.start(t, 0, "old-host")
	b.start(t, 1, "deploy")
	r := b.allow(t, 0, 0)
	b.start(t, 0, "rollback-host")
	require.Equal(t, 0, b.active(t))

	used := b.rollback(t)
	assert.True(t, used.Used)
	assert.Equal(t, "rollback-host", used.EndedBy)
	assert.False(t, used.Pending())
	var seq int64
	var by string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT (after->'rollback_allowance'->>'audit_seq')::bigint, after->'rollback_allowance'->>'allowed_by'
        FROM audit_log WHERE action = $1 ORDER BY seq DESC LIMIT 1`, audit.ActionReplayPolicy).Scan(&seq, &by))
	assert.Equal(t, r.AuditSeq, seq, "the activation names the allowance it used")
	assert.Equal(t, oncall.Subject, by)
	var reason string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT reason FROM audit_log WHERE seq = $1 AND action = $2`, seq, audit.ActionReplayPolicyRollback).Scan(&reason))
	assert.Equal(t, "the newer rule blocked refunds", reason)

	b.start(t, 2, "next-deploy")
	b.start(t, 0, "rollback-host-restarted")
	assert.Equal(t, 2, b.active(t), "the allowance was used: a restart with its file is an older replica again")
	b.start(t, 1, "deploy-restarted")
	assert.Equal(t, 2, b.active(t))
}

// TestRollbackAllowanceEndsWithANewerOneOrAnotherActivation: one
// allowance waits at a time: a newer one replaces it (its audit row says
// which), and a deploy of another version before anyone used it ends it.
func TestRollbackAllowanceEndsWithANewerOneOrAnotherActivation(t *testing.T) {
	t.Parallel()
	b := setupPolicies(t, 4)
	ctx := context.Background()
	for i := range 3 {
		b.start(t, i, fmt.Sprintf("host-%d", i))
	}
	b.allow(t, 0, 0)
	b.allow(t, 1, 0)
	var replaced string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT before->>'allowed_rollback' FROM audit_log WHERE action = $1 ORDER BY seq DESC LIMIT 1`,
		audit.ActionReplayPolicyRollback).Scan(&replaced))
	assert.Equal(t, b.tables[0].Version(), replaced)
	_, err := replay.AllowPolicyRollback(ctx, b.db.Pool, b.tables[1].Version()[:12], 0, oncall, "again")
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "allowed already: %v", err)
	assert.ErrorContains(t, err, "allow replay policy "+b.tables[1].Version()[:12]+" again: ")

	b.start(t, 0, "host-0-restarted")
	assert.Equal(t, 2, b.active(t), "the newer allowance replaced the one for version 0")
	b.start(t, 3, "deploy")
	ended := b.rollback(t)
	assert.False(t, ended.Pending())
	assert.False(t, ended.Used)
	assert.Equal(t, "deploy", ended.EndedBy)
	b.start(t, 1, "host-1-restarted")
	assert.Equal(t, 3, b.active(t), "a deploy in between ended the allowance")
}

// TestMigration0033BoundsTheAllowancesMadeBefore: allowances made before
// migration 0033 (a cleared superseded_at, never expiring) end with it:
// every version so allowed is replaced again, and the last one is carried
// over with the hour it would have had, naming its audit entry.
func TestMigration0033BoundsTheAllowancesMadeBefore(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	conn := db.OwnerAt(t, 32)
	a, active, c := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	_, err := conn.Exec(ctx, `
        INSERT INTO replay_policy_active (version, name, activated_by) VALUES ('`+active+`', 'policy.toml', 'host-2');
        INSERT INTO replay_policy_versions (version, name, activated_at, activated_by, superseded_at) VALUES
            ('`+a+`', 'a.toml', now() - interval '3 days', 'host-0', NULL),
            ('`+active+`', 'policy.toml', now() - interval '1 day', 'host-2', NULL),
            ('`+c+`', 'c.toml', now() - interval '2 days', 'host-1', NULL)`)
	require.NoError(t, err)
	var seqs []int64
	for i, v := range []string{a, c} {
		// fix-audit-v3: written as a console of schema 32 appended them
		// (audit.Append now fills columns of migration 0038); the chain's
		// hashes are not what this reads.
		seq := int64(i + 1)
		_, err := conn.Exec(ctx, `INSERT INTO audit_log (seq, at, actor_issuer, actor_subject, actor_email, actor_email_verified,
                action, outcome, object_type, object_id, reason, prev_hash, hash)
            VALUES ($1::bigint, now(), $2, $3, $4, $5, $6, 'ok', 'replay_policy', $7, 'go back',
                CASE WHEN $1::bigint > 1 THEN sha256(int8send($1::bigint - 1)) END, sha256(int8send($1::bigint)))`,
			seq, oncall.Issuer, oncall.Subject, oncall.Email, oncall.EmailVerified, audit.ActionReplayPolicyRollback, v)
		require.NoError(t, err)
		seqs = append(seqs, seq)
	}

	_, err = migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	var inForce []string
	require.NoError(t, conn.QueryRow(ctx, `SELECT array_agg(version) FROM replay_policy_versions WHERE superseded_at IS NULL`).Scan(&inForce))
	assert.Equal(t, []string{active}, inForce, "only the active version is not replaced")
	r := lastRollback(t, db.Pool)
	assert.Equal(t, c, r.Version, "the last allowance is carried over")
	assert.Equal(t, seqs[1], r.AuditSeq)
	assert.Equal(t, time.Hour, r.ExpiresAt.Sub(r.AllowedAt))
	assert.True(t, r.Pending())
	_, err = db.Pool.Exec(ctx, `UPDATE replay_policy_versions SET superseded_at = NULL WHERE version = $1`, a)
	assert.Error(t, err, "a version let back by hand")
}

// TestNoStartTakesAnOlderPolicyBack: the ways a start could bring a
// replaced version back without a rollback allowed to it. Two processes
// starting together with different files, first on an empty database and
// then as restarts, activate one after the other: one version in force,
// the active one, and restarts change nothing. A file edited back to the
// older version's content (its bytes, or with other comments, blank lines
// and key order) has the older version and is refused.
func TestNoStartTakesAnOlderPolicyBack(t *testing.T) {
	t.Parallel()
	b := setupPolicies(t, 2)
	ctx := context.Background()
	together := func(names ...string) {
		t.Helper()
		ready, errs := make(chan struct{}), make(chan error, len(names))
		for i, name := range names {
			cfg := b.config(t)
			cfg.Policy = func() *replaypolicy.Table { return b.tables[i] }
			s := replay.New(b.db.Pool, cfg)
			go func() {
				<-ready
				errs <- s.ActivatePolicy(ctx, name)
			}()
		}
		close(ready)
		for range names {
			require.NoError(t, <-errs)
		}
	}
	inForce := func() []string {
		var vs []string
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT array_agg(version) FROM replay_policy_versions WHERE superseded_at IS NULL`).Scan(&vs))
		return vs
	}
	together("first-0", "first-1")
	won := b.active(t)
	assert.Equal(t, []string{b.tables[won].Version()}, inForce())
	activations := countAudit(t, b.replayBundle, audit.ActionReplayPolicy)
	assert.Equal(t, 2, activations, "both versions were new: the second start is the deploy that replaced the first")
	for range 3 {
		together("restart-0", "restart-1")
		assert.Equal(t, won, b.active(t), "restarts change nothing")
	}
	assert.Equal(t, activations, countAudit(t, b.replayBundle, audit.ActionReplayPolicy))

	// The file of the version that lost, edited back by hand.
	lost := 1 - won
	src, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	text := string(src)
	if lost == 1 {
		text = strings.Replace(text, "default_rate = 500", "default_rate = 450", 1)
	}
	for _, edited := range []string{text, "# edited back by hand\n\n" + strings.ReplaceAll(text, " = ", "   =   ")} {
		tbl, err := replaypolicy.Parse("edited.toml", []byte(edited))
		require.NoError(t, err)
		require.Equal(t, b.tables[lost].Version(), tbl.Version(), "comments and spacing are not content")
		cfg := b.config(t)
		cfg.Policy = func() *replaypolicy.Table { return tbl }
		require.NoError(t, replay.New(b.db.Pool, cfg).ActivatePolicy(ctx, "edited"))
		assert.Equal(t, won, b.active(t), "a file edited back to a replaced version is that version")
	}
}
