package replay_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// contentTables are the shipped policy file and a newer one whose rules
// and retention terms both differ.
func contentTables(t *testing.T) (older, newer *replaypolicy.Table) {
	t.Helper()
	src, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	older, err = replaypolicy.Parse("older.toml", src)
	require.NoError(t, err)
	newer, err = replaypolicy.Parse("newer.toml", []byte(strings.Replace(string(src), "default_rate = 500", "default_rate = 400", 1)+
		"\n[[retention.rule]]\ntenant = \"acme\"\nitem_type = \"billing.>\"\nclosed = \"365d\"\n"))
	require.NoError(t, err)
	require.NotEqual(t, older.Version(), newer.Version())
	require.NotEqual(t, replay.RetentionVersion(older.Retention()), replay.RetentionVersion(newer.Retention()))
	return older, newer
}

// TestActivationRecordsWhatTheVersionSays: the activation that makes a
// replay policy version and retention terms active records what they say,
// and each reads back, by its full name or the start of it, as the rules
// and terms of the file it came from, whichever file the reader runs; the
// replaced version keeps what it said. A restart of a replaced version
// records nothing new and changes nothing.
func TestActivationRecordsWhatTheVersionSays(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	older, newer := contentTables(t)
	start := func(tbl *replaypolicy.Table, process string) {
		cfg := b.config(t)
		cfg.Policy = func() *replaypolicy.Table { return tbl }
		require.NoError(t, replay.New(b.db.Pool, cfg).ActivatePolicy(ctx, process))
	}
	start(older, "old-host-1")
	start(newer, "new-host-7")
	start(older, "old-host-1-restarted")

	for _, tc := range []struct {
		name   string
		tbl    *replaypolicy.Table
		active bool
		by     string
	}{{"Replaced", older, false, "old-host-1"}, {"Active", newer, true, "new-host-7"}} {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := replay.PolicyContent(ctx, b.db.Pool, tc.tbl.Version())
			require.NoError(t, err)
			require.True(t, rules.Recorded(), rules.NotRecorded())
			assert.Equal(t, tc.active, rules.SupersededAt == nil)
			assert.Equal(t, tc.by, rules.RecordedBy)
			assert.Equal(t, tc.tbl.Canonical(), rules.Text)
			assert.Equal(t, tc.tbl.Version(), rules.Rules.Version())
			assert.Equal(t, tc.tbl.Rules(), rules.Rules.Rules())
			assert.Equal(t, tc.tbl.Classes(), rules.Rules.Classes())
			assert.Equal(t, tc.tbl.ErrorRules(), rules.Rules.ErrorRules())
			assert.Equal(t, tc.tbl.GenerationLimit(), rules.Rules.GenerationLimit())

			v := replay.RetentionVersion(tc.tbl.Retention())
			terms, err := replay.TermsContent(ctx, b.db.Pool, v)
			require.NoError(t, err)
			require.True(t, terms.Recorded(), terms.NotRecorded())
			assert.Equal(t, tc.tbl.Retention().Lines(), terms.Retention.Lines())
			assert.Equal(t, v, replay.RetentionVersion(terms.Retention))

			found, err := replay.FindVersion(ctx, b.db.Pool, tc.tbl.Version()[:12])
			require.NoError(t, err)
			assert.False(t, found.Terms)
			assert.Equal(t, tc.tbl.Rules(), found.Rules.Rules())
			found, err = replay.FindVersion(ctx, b.db.Pool, v[:12])
			require.NoError(t, err)
			assert.True(t, found.Terms)
			assert.Equal(t, "retention terms", found.Kind())
		})
	}
	_, err := replay.FindVersion(ctx, b.db.Pool, "0123456789ab")
	assert.Equal(t, quarantine.ENOTFOUND, quarantine.ErrorCode(err), "%v", err)
	_, err = replay.PolicyContent(ctx, b.db.Pool, strings.Repeat("0", 64))
	assert.Equal(t, quarantine.ENOTFOUND, quarantine.ErrorCode(err), "%v", err)
}

// TestVersionsBeforeMigration0039AreNotRecorded: a version replaced before
// the console kept what versions say reads as not recorded, saying so; the
// version that was active then gets its content at the next start of a
// process with its file, and not from one with another file.
func TestVersionsBeforeMigration0039AreNotRecorded(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	older, newer := contentTables(t)
	// As migration 0032 left them: a replaced version and the active one,
	// with nothing of what they said.
	_, err := b.db.OwnerPool.Exec(ctx, `INSERT INTO replay_policy_versions (version, name, activated_at, activated_by, superseded_at)
        VALUES ($1, 'old.toml', now() - interval '90 days', 'host-1', now() - interval '30 days')`, strings.Repeat("ab", 32))
	require.NoError(t, err)
	_, err = b.db.OwnerPool.Exec(ctx, `INSERT INTO replay_policy_versions (version, name, activated_by) VALUES ($1, 'policy.toml', 'host-2')`, older.Version())
	require.NoError(t, err)
	_, err = b.db.OwnerPool.Exec(ctx, `INSERT INTO replay_policy_active (version, name, activated_by) VALUES ($1, 'policy.toml', 'host-2')`, older.Version())
	require.NoError(t, err)

	replaced, err := replay.PolicyContent(ctx, b.db.Pool, strings.Repeat("ab", 32))
	require.NoError(t, err)
	assert.False(t, replaced.Recorded())
	assert.Nil(t, replaced.Rules)
	assert.Contains(t, replaced.NotRecorded(), "not recorded: replay policy abababababab was last active before the console kept what versions say (migration 0039)")

	newerCfg := b.config(t)
	newerCfg.Policy = func() *replaypolicy.Table { return newer }
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_policy_versions SET superseded_at = now() WHERE version = $1`, older.Version())
	require.NoError(t, err)
	_, err = b.db.OwnerPool.Exec(ctx, `INSERT INTO replay_policy_versions (version, name, activated_by) VALUES ($1, 'newer.toml', 'host-3')`, newer.Version())
	require.NoError(t, err)
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_policy_active SET version = $1`, newer.Version())
	require.NoError(t, err)
	cfg := b.config(t)
	cfg.Policy = func() *replaypolicy.Table { return older }
	require.NoError(t, replay.New(b.db.Pool, cfg).ActivatePolicy(ctx, "old-host-restarted"))
	got, err := replay.PolicyContent(ctx, b.db.Pool, older.Version())
	require.NoError(t, err)
	assert.False(t, got.Recorded(), "a replaced version's restart records nothing")

	require.NoError(t, replay.New(b.db.Pool, newerCfg).ActivatePolicy(ctx, "new-host-restarted"))
	got, err = replay.PolicyContent(ctx, b.db.Pool, newer.Version())
	require.NoError(t, err)
	require.True(t, got.Recorded(), "the active version's content comes with the next start of its file")
	assert.Equal(t, newer.Rules(), got.Rules.Rules())
	assert.Equal(t, "new-host-restarted", got.RecordedBy)
}

// TestVersionContentCannotBeChanged: the runtime role may not change or
// remove what a version said once recorded, and no text but the one the
// version hashes can be recorded for it, by anyone.
func TestVersionContentCannotBeChanged(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	older, newer := contentTables(t)
	require.NoError(t, b.replays.ActivatePolicy(ctx, "host-1"))
	code := func(err error) string {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Code
		}
		return ""
	}
	for _, sql := range []string{
		`UPDATE replay_policy_contents SET content = content || ' '`,
		`UPDATE replay_policy_contents SET recorded_by = 'someone else'`,
		`DELETE FROM replay_policy_contents`,
		`TRUNCATE replay_policy_contents`,
		`UPDATE retention_terms_contents SET content = content || ' '`,
		`DELETE FROM retention_terms_contents`,
		`TRUNCATE retention_terms_contents`,
	} {
		_, err := b.db.Pool.Exec(ctx, sql)
		assert.Equal(t, "42501", code(err), "%s: %v", sql, err) // insufficient_privilege
	}
	got, err := replay.PolicyContent(ctx, b.db.Pool, older.Version())
	require.NoError(t, err)
	assert.Equal(t, older.Canonical(), got.Text)

	// Another text under a version: refused, for the owner too.
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_policy_contents SET content = $1`, newer.Canonical())
	assert.Equal(t, "23514", code(err), "%v", err) // check_violation
	_, err = b.db.OwnerPool.Exec(ctx, `INSERT INTO replay_policy_versions (version, name, superseded_at) VALUES ($1, 'newer.toml', now())`, newer.Version())
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO replay_policy_contents (version, content, recorded_by) VALUES ($1, $2, 'forger')`,
		newer.Version(), older.Canonical())
	assert.Equal(t, "23514", code(err), "%v", err)
}
