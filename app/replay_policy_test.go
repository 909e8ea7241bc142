package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestPolicyFileOfAStaleProcessIsReadOnlyWhenItChanges: a process whose
// table is not the active version reads its policy file again before
// each claim, but logs only what changed: a file that does not parse once
// (not once a poll, and not as "does not have it yet"), a new version
// once. quarantine_replay_policy_stale is 1 until the file has the active
// version, then 0.
func TestPolicyFileOfAStaleProcessIsReadOnlyWhenItChanges(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	nc, js := natstest.Start(t).Connect(t)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	src, err := os.ReadFile("../dev/policy.toml")
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(file, src, 0o600))
	access, err := authz.NewAccess(ctx, db.Pool, authz.GroupMap{}, log)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	p, err := newReplayParts(ctx, ReplayConfig{PolicyFile: file, Workers: 1, Lease: 30 * time.Second, Metrics: reg}, db.Pool, db.Pool, nc, js, access, nil, log)
	require.NoError(t, err)
	require.NoError(t, p.activate(ctx))
	stale := func(want string) {
		t.Helper()
		assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP quarantine_replay_policy_stale 1 while this process's replay policy (its POLICY_FILE) is not the active version: it submits, approves and replays nothing; 0 while it is.
# TYPE quarantine_replay_policy_stale gauge
quarantine_replay_policy_stale `+want+"\n"), "quarantine_replay_policy_stale"))
	}
	polls := func() {
		t.Helper()
		for range 5 {
			n, err := p.workers[0].RunOnce(ctx)
			require.NoError(t, err)
			require.Zero(t, n)
		}
	}
	stale("0")

	newer := []byte(strings.Replace(string(src), "default_rate = 500", "default_rate = 400", 1))
	next, err := replaypolicy.Parse(file, newer)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `UPDATE replay_policy_active SET version = $1`, next.Version()) // another replica deployed it
	require.NoError(t, err)
	stale("1")

	require.NoError(t, os.WriteFile(file, []byte("[[rule]]\nitem_type = \n"), 0o600)) // the deploy wrote half a file
	polls()
	assert.Equal(t, 1, strings.Count(logs.String(), "replay policy file cannot be read again"), logs.String())
	assert.Equal(t, 1, strings.Count(logs.String(), "could not be read again (the log says why)"), "the worker says why it waits, once:\n%s", logs.String())
	stale("1")

	require.NoError(t, os.WriteFile(file, newer, 0o600))
	polls()
	assert.Equal(t, 1, strings.Count(logs.String(), "replay policy reloaded"), logs.String())
	assert.Contains(t, logs.String(), "version="+next.Version())
	assert.Equal(t, next.Version(), p.service.Policy().Version())
	stale("0")
}
