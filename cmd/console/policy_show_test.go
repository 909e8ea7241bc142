package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestPolicyShowCommand: "console policy show" prints what the active
// replay policy and retention terms say, as the activation recorded them,
// not this host's file; "show VERSION" any version that was active, of
// either kind, by the start of its name; --canonical the exact text the
// version hashes. A version replaced before the console kept what
// versions say is shown as not recorded; one never active is refused.
func TestPolicyShowCommand(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	e := env(map[string]string{"DATABASE_URL": db.URL})
	show := func(args ...string) string {
		var out bytes.Buffer
		require.NoError(t, run(ctx, append([]string{"console", "policy", "show"}, args...), e, &out, io.Discard))
		return out.String()
	}
	assert.Contains(t, show(), "replay policy: none recorded yet")

	src, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	older, err := replaypolicy.Parse("older.toml", src)
	require.NoError(t, err)
	newer, err := replaypolicy.Parse("newer.toml", []byte(strings.Replace(string(src), "\n[[rule]]", "\n[[rule]]\nitem_type = \"ledger.special\"\nclass = \"manual\"\n\n[[rule]]", 1)+
		"\n[[retention.rule]]\ntenant = \"acme\"\nitem_type = \"billing.>\"\nclosed = \"365d\"\n"))
	require.NoError(t, err)
	for _, p := range []struct {
		tbl     *replaypolicy.Table
		process string
	}{{older, "host-1"}, {newer, "host-2"}} {
		tbl := p.tbl
		require.NoError(t, replay.New(db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return tbl }}).ActivatePolicy(ctx, p.process))
	}
	terms := replay.RetentionVersion(newer.Retention())

	out := show()
	assert.Contains(t, out, "replay policy "+newer.Version()+" (newer.toml), active since ")
	assert.Contains(t, out, "activated by host-2")
	assert.Regexp(t, `ledger\.special +any +manual`, out, "the active version's rules")
	assert.Contains(t, out, "retention terms "+terms+" (newer.toml)")
	assert.Regexp(t, `acme +billing\.> +90d +90d +365d +365d +365d`, out, "the active terms")

	out = show(older.Version()[:12])
	assert.Contains(t, out, "replay policy "+older.Version()+" (older.toml), last active from ")
	assert.Contains(t, out, "replaced at ")
	assert.NotContains(t, out, "ledger.special")
	assert.NotContains(t, out, "retention terms")

	out = show(terms[:12])
	assert.True(t, strings.HasPrefix(out, "retention terms "+terms), out)
	assert.NotContains(t, out, "rules, first match wins")

	sum := sha256.Sum256([]byte(show(newer.Version()[:12], "--canonical")))
	assert.Equal(t, newer.Version(), hex.EncodeToString(sum[:]), "the text hashes to the version")

	_, err = db.OwnerPool.Exec(ctx, `INSERT INTO replay_policy_versions (version, name, activated_at, activated_by, superseded_at)
        VALUES ($1, 'old.toml', now() - interval '90 days', 'host-0', now() - interval '30 days')`, strings.Repeat("cd", 32))
	require.NoError(t, err)
	out = show("cdcdcdcdcdcd")
	assert.Contains(t, out, "not recorded: replay policy cdcdcdcdcdcd was last active before the console kept what versions say (migration 0039)")
	assert.Error(t, run(ctx, []string{"console", "policy", "show", "cdcdcdcdcdcd", "--canonical"}, e, io.Discard, io.Discard))

	for _, v := range []string{"0123456789ab", "abc"} {
		assert.Error(t, run(ctx, []string{"console", "policy", "show", v}, e, io.Discard, io.Discard), v)
	}
}

// TestPolicyShowCanonicalNeedsVersion: --canonical prints one version's
// text; without VERSION (the active policy and terms are two versions) it
// is a usage error, exit status 2, saying where the versions are, before
// any connection is made.
func TestPolicyShowCanonicalNeedsVersion(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"console", "policy", "show", "--canonical"},
		env(map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}), &out, &errOut)
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	assert.Empty(t, out.String(), "nothing to hash on stdout")
	assert.Contains(t, errOut.String(), "console policy show VERSION --canonical")
	assert.Contains(t, errOut.String(), "console policy status")
}
