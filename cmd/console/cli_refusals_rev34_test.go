package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRev34PolicyShowTakesVersionAfterItsFlags: "console policy show
// --canonical abcdef12" (VERSION after the flags, as people type it) was
// refused with a bare `unexpected argument "abcdef12"`; it is taken as
// VERSION, whether before or after the flags, and a flag's own value is
// never taken for it.
func TestRev34PolicyShowTakesVersionAfterItsFlags(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	src, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	tbl, err := replaypolicy.Parse("dev.toml", src)
	require.NoError(t, err)
	require.NoError(t, replay.New(db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return tbl }}).ActivatePolicy(ctx, "host-1"))
	v := tbl.Version()[:12]
	show := func(args ...string) string {
		var out bytes.Buffer
		require.NoError(t, run(ctx, append([]string{"console", "policy", "show"}, args...), env(map[string]string{"DATABASE_URL": db.URL}), &out, io.Discard), args)
		return out.String()
	}
	first := show(v, "--canonical")
	assert.Equal(t, first, show("--canonical", v), "VERSION after the flag")
	assert.Equal(t, first, show("--database-url", db.URL, "--canonical", v), "after a flag with a value")
	assert.Contains(t, show("--database-url", db.URL), "replay policy "+tbl.Version(), "a flag's value is not VERSION: the active policy is shown")
}

// TestRev34UnknownSubcommandIsNamed: "console audit export" (there is
// none) ended with a bare "console: usage"; an unknown audit or policy
// command is named, as an unknown command is, with exit status 2.
func TestRev34UnknownSubcommandIsNamed(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"audit", "export"}, {"policy", "apply"}, {"retention", "purge"}} {
		err := run(context.Background(), append([]string{"console"}, args...), env(map[string]string{}), io.Discard, io.Discard)
		require.Error(t, err, args)
		assert.Equal(t, 2, exitCode(err), args)
		assert.Contains(t, err.Error(), `unknown `+args[0]+` command "`+args[1]+`"`)
	}
}

// TestRev34CheckpointSaysWhenNothingWasSigned: "console audit checkpoint
// --reason pre-maintenance" on a head signed already printed "audit
// checkpoint: seq N ... signed by key K at T" with the earlier time, as if
// it had signed, and its reason was recorded nowhere. It says that the
// head was signed already, by which checkpoint, and that nothing was.
func TestRev34CheckpointSaysWhenNothingWasSigned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	key := newKeyFile(t)
	_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.event", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	checkpoint := func(reason string) string {
		var out bytes.Buffer
		require.NoError(t, run(ctx, []string{"console", "audit", "checkpoint", "--audit-signing-key", key, "--reason", reason},
			env(map[string]string{"DATABASE_URL": db.URL}), &out, io.Discard))
		return out.String()
	}
	first := checkpoint("nightly")
	assert.Contains(t, first, "signed by key")
	assert.NotContains(t, first, "signed already")
	again := checkpoint("pre-maintenance")
	assert.Contains(t, again, "was signed already")
	assert.Contains(t, again, `reason "nightly"`)
	assert.Contains(t, again, "nothing signed now")
}
