package app

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStaleReplicaDoesNotLogAReloadEveryPoll (review rev-ops): a replica
// whose policy file is not the active version (another replica deployed a
// newer one, or this one is newer and an older one restarted) has every
// replay worker call Reload on every claim attempt (Worker.RunOnce ->
// activeTable -> cfg.Reload), every 200 ms when idle; the reload closure
// of newReplayParts reads and parses the file and logs "replay policy
// reloaded" at Info each time, with a version that is not in force
// anywhere. With the default 2 workers that is 10 lines a second, ~860,000
// a day, per stale replica, each telling on-call the policy was reloaded.
func TestStaleReplicaDoesNotLogAReloadEveryPoll(t *testing.T) {
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
	p, err := newReplayParts(ctx, ReplayConfig{PolicyFile: file, Workers: 1, Lease: 30 * time.Second}, db.Pool, db.Pool, nc, js, access, nil, log)
	require.NoError(t, err)
	require.NoError(t, p.activate(ctx))

	// Another replica activated another version; this one's file does not have it.
	_, err = db.Pool.Exec(ctx, `UPDATE replay_policy_active SET version = 'f00d' || version`)
	require.NoError(t, err)
	for range 10 { // two seconds of an idle worker
		n, err := p.workers[0].RunOnce(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
	}
	reloads := strings.Count(logs.String(), "replay policy reloaded")
	assert.LessOrEqual(t, reloads, 1, "a stale replica logs a reload of the same file on every poll:\n%s", logs.String())
}
