package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestEmailBindingNotASCIIFlagged takes role bindings keyed by Go's
// strings.ToLower (before 0050) through migration 0050: one whose address
// is not ASCII is flagged as matching nobody, ASCII ones and identity
// bindings stay in force, and from then on the table refuses an email
// binding without a key (not ASCII, or an ASCII capital).
func TestEmailBindingNotASCIIFlagged(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	conn := db.OwnerAt(t, 49)

	_, err := conn.Exec(ctx, `INSERT INTO role_bindings (subject, role, tenant, created_by) VALUES
        ('email:josé@example.com', 'approver', 'acme', 'admin@example.com'),
        ('email:ops@kiwi.example', 'approver', 'acme', 'admin@example.com'),
        ('user:https://idp.example|Ünïcode', 'viewer', 'acme', 'admin@example.com')`)
	require.NoError(t, err)
	require.NoError(t, migrations.MigrateTo(ctx, conn, 50))

	rows, err := conn.Query(ctx, `SELECT subject FROM role_bindings WHERE unmatched_since IS NOT NULL ORDER BY subject`)
	require.NoError(t, err)
	flagged, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{"email:josé@example.com"}, flagged, "only the email binding whose address is not ASCII is flagged")

	for _, subject := range []string{"email:zoë@example.com", "email:Ops@example.com"} {
		_, err = conn.Exec(ctx, `INSERT INTO role_bindings (subject, role, tenant, created_by) VALUES ($1, 'viewer', 'acme', '')`, subject)
		assert.ErrorContains(t, err, "role_bindings_email_key_check", "%s is stored", subject)
	}
	_, err = conn.Exec(ctx, `INSERT INTO role_bindings (subject, role, tenant, created_by) VALUES ('email:ops@xn--kiwi-rwcc.example', 'viewer', 'acme', '')`)
	assert.NoError(t, err, "an ASCII address is an email binding's key")
}
