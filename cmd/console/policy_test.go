package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestPolicyRollbackCommand: "console policy rollback" lets a replaced
// version be made active again within --for (an hour by default), as the
// runtime role, with its audit row in the same transaction, and "console
// policy status" shows the allowance waiting and until when; a version
// not replaced, one never active, a start too short, a missing reason and
// a --for out of bounds are refused and change nothing.
func TestPolicyRollbackCommand(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	older, newer := strings.Repeat("a", 64), strings.Repeat("b", 64)
	_, err := db.Pool.Exec(ctx, `INSERT INTO replay_policy_versions (version, name, activated_at, activated_by, superseded_at, superseded_by)
        VALUES ($1, 'policy.toml', now() - interval '2 days', 'host-1', now() - interval '1 day', 'host-2'),
               ($2, 'policy.toml', now() - interval '1 day', 'host-2', NULL, '')`, older, newer)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO replay_policy_active (version, name, activated_by) VALUES ($1, 'policy.toml', 'host-2')`, newer)
	require.NoError(t, err)
	e := env(map[string]string{"DATABASE_URL": db.URL})
	superseded := func(v string) bool {
		var at *time.Time
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT superseded_at FROM replay_policy_versions WHERE version = $1`, v).Scan(&at))
		return at != nil
	}
	status := func() string {
		var out bytes.Buffer
		require.NoError(t, run(ctx, []string{"console", "policy", "status"}, e, &out, io.Discard))
		return out.String()
	}
	st := status()
	assert.Contains(t, st, "\nrollback: none allowed")
	assert.Contains(t, st, "retention terms rollback: none allowed", "status says how retention terms stand too")
	assert.Regexp(t, `retention terms: (none recorded yet|[0-9a-f]{64} )`, st)
	rows := func() int {
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'replay.policy_rollback_allowed'`).Scan(&n))
		return n
	}

	for _, args := range [][]string{
		{"--to", newer[:12], "--reason", "go back"},           // active: nothing to allow
		{"--to", strings.Repeat("c", 12), "--reason", "x"},    // never active
		{"--to", older[:6], "--reason", "go back"},            // too short to name one
		{"--to", older[:12]},                                  // no reason
		{"--to", older[:12], "--reason", "   "},               // a blank one
		{"--to", older[:12], "--reason", "x", "--for", "48h"}, // longer than a day
		{"--to", older[:12], "--reason", "x", "--for", "10s"}, // too short to start anything
	} {
		err := run(ctx, append([]string{"console", "policy", "rollback"}, args...), e, io.Discard, io.Discard)
		assert.Error(t, err, "%v", args)
	}
	assert.True(t, superseded(older), "refusals changed nothing")
	assert.Zero(t, rows())

	var out bytes.Buffer
	require.NoError(t, run(ctx, []string{"console", "policy", "rollback", "--to", older[:12], "--reason", "the new rule blocked refunds"}, e, &out, io.Discard))
	assert.Contains(t, out.String(), older)
	// The allowance is a row of its own; the older version stays replaced
	// (before migration 0033 its superseded_at was cleared, for good:
	// changed on purpose).
	assert.True(t, superseded(older))
	assert.False(t, superseded(newer))
	var left time.Duration
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT expires_at - allowed_at FROM replay_policy_rollback WHERE version = $1 AND ended_at IS NULL`, older).Scan(&left))
	assert.Equal(t, time.Hour, left, "the default --for")
	st = status()
	assert.Contains(t, st, "active: "+newer)
	assert.Contains(t, st, "rollback: to "+older)
	assert.Contains(t, st, "waiting until")
	var reason, subject string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT reason, actor_subject FROM audit_log WHERE action = 'replay.policy_rollback_allowed' AND object_id = $1`, older).
		Scan(&reason, &subject))
	assert.Equal(t, "the new rule blocked refunds", reason)
	assert.Contains(t, subject, "@", "the operator as the operating system knows them")

	err = run(ctx, []string{"console", "policy", "rollback", "--to", older[:12], "--reason", "again"}, e, io.Discard, io.Discard)
	assert.Error(t, err, "allowed already")
	assert.Equal(t, 1, rows())

	_, err = db.Pool.Exec(ctx, `UPDATE replay_policy_rollback SET allowed_at = allowed_at - interval '2 hours', expires_at = expires_at - interval '2 hours'`)
	require.NoError(t, err)
	assert.Contains(t, status(), "expired unused")
	require.NoError(t, run(ctx, []string{"console", "policy", "rollback", "--to", older[:12], "--reason", "again", "--for", "15m"}, e, io.Discard, io.Discard),
		"an expired allowance is made again")
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT expires_at - allowed_at FROM replay_policy_rollback WHERE version = $1 AND ended_at IS NULL`, older).Scan(&left))
	assert.Equal(t, 15*time.Minute, left)
	assert.Equal(t, 2, rows())
}
