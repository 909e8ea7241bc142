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
// version be made active again, as the runtime role, with its audit row in
// the same transaction; a version not replaced, one never active, a start
// too short and a missing reason are refused and change nothing.
func TestPolicyRollbackCommand(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	older, newer := strings.Repeat("a", 64), strings.Repeat("b", 64)
	_, err := db.Pool.Exec(ctx, `INSERT INTO replay_policy_versions (version, name, activated_at, activated_by, superseded_at, superseded_by)
        VALUES ($1, 'policy.toml', now() - interval '2 days', 'host-1', now() - interval '1 day', 'host-2'),
               ($2, 'policy.toml', now() - interval '1 day', 'host-2', NULL, '')`, older, newer)
	require.NoError(t, err)
	e := env(map[string]string{"DATABASE_URL": db.URL})
	superseded := func(v string) bool {
		var at *time.Time
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT superseded_at FROM replay_policy_versions WHERE version = $1`, v).Scan(&at))
		return at != nil
	}
	rows := func() int {
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'replay.policy_rollback_allowed'`).Scan(&n))
		return n
	}

	for _, args := range [][]string{
		{"--to", newer[:12], "--reason", "go back"},        // active: nothing to allow
		{"--to", strings.Repeat("c", 12), "--reason", "x"}, // never active
		{"--to", older[:6], "--reason", "go back"},         // too short to name one
		{"--to", older[:12]},                               // no reason
		{"--to", older[:12], "--reason", "   "},            // a blank one
	} {
		err := run(ctx, append([]string{"console", "policy", "rollback"}, args...), e, io.Discard, io.Discard)
		assert.Error(t, err, "%v", args)
	}
	assert.True(t, superseded(older), "refusals changed nothing")
	assert.Zero(t, rows())

	var out bytes.Buffer
	require.NoError(t, run(ctx, []string{"console", "policy", "rollback", "--to", older[:12], "--reason", "the new rule blocked refunds"}, e, &out, io.Discard))
	assert.Contains(t, out.String(), older)
	assert.False(t, superseded(older), "the older version may be made active again")
	assert.False(t, superseded(newer))
	var reason, subject string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT reason, actor_subject FROM audit_log WHERE action = 'replay.policy_rollback_allowed' AND object_id = $1`, older).
		Scan(&reason, &subject))
	assert.Equal(t, "the new rule blocked refunds", reason)
	assert.Contains(t, subject, "@", "the operator as the operating system knows them")

	err = run(ctx, []string{"console", "policy", "rollback", "--to", older[:12], "--reason", "again"}, e, io.Discard, io.Discard)
	assert.Error(t, err, "allowed already")
	assert.Equal(t, 1, rows())
}
