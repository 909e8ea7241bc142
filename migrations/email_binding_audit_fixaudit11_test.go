package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestFixAudit11UnmatchedBindingsAudited: migration 0050 stopped matching
// the email bindings whose address is not ASCII, silently; 0052 appends
// one binding.unmatched entry per binding it flagged (as the console, in
// the binding's tenant, outside any for "*", the reason naming 0050), and
// none for a binding in force, and the chain still verifies with the
// console's own verifier: the entries are hashed as package audit hashes.
func TestFixAudit11UnmatchedBindingsAudited(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	conn := db.OwnerAt(t, 49)

	before, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.before", Outcome: audit.OutcomeOK, Before: map[string]any{"a": 1}})
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO role_bindings (subject, role, tenant, created_by) VALUES
        ('email:josé@example.com', 'approver', 'acme', 'admin@example.com'),
        ('email:zoë@example.com', 'admin', '*', 'admin@example.com'),
        ('email:ops@kiwi.example', 'approver', 'acme', 'admin@example.com')`)
	require.NoError(t, err)
	require.NoError(t, migrations.MigrateTo(ctx, conn, 50))
	// A console of 0050's schema appends meanwhile.
	_, err = audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.between", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	require.NoError(t, migrations.MigrateTo(ctx, conn, 52))

	rows, err := conn.Query(ctx, `SELECT l.tenant || ' ' || b.subject || ' ' || l.actor_subject || ' ' || l.hash_version
        FROM audit_log l JOIN role_bindings b ON l.object_type = 'role_binding' AND l.object_id = b.id::text
        WHERE l.action = $1 AND l.reason LIKE 'migration 0050 %' AND l.after->>'UnmatchedSince' IS NOT NULL
          AND l.before->>'UnmatchedSince' IS NULL ORDER BY l.seq`, audit.ActionBindingUnmatched)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{"acme email:josé@example.com  3", " email:zoë@example.com  3"}, got,
		"one entry per binding 0050 flagged, as the console, in its tenant")

	res, err := audit.Verify(ctx, db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	assert.Zero(t, res.FirstBad, "the chain verifies: %s", res.Problem)
	assert.Equal(t, before.Seq+3, res.Rows, "the appended entries continue the chain")

	page, err := audit.List(ctx, db.Pool, audit.Filter{Action: audit.ActionBindingUnmatched})
	require.NoError(t, err)
	require.Len(t, page.Entries, 2, "the auditor finds them by their action")
	assert.Contains(t, page.Entries[0].Reason, "holds admin in every tenant no more")
}
