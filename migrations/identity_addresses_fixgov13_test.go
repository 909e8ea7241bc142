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

// TestFixGov13IdentityAddressesBackfilled takes what the console knew of
// people's addresses before 0057 through it: each address of the
// directory, of a request's requester, of an approval and of
// replay_approval_addresses (which it replaces) is an address of its
// identity, kept once, and an identity without an address has none.
func TestFixGov13IdentityAddressesBackfilled(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	conn := db.OwnerAt(t, 56)

	_, err := conn.Exec(ctx, `INSERT INTO user_directory (issuer, subject, email) VALUES
        ('https://idp.example', 'oncall', 'oncall-c@example.com'), ('https://idp.example', 'nobody', '')`)
	require.NoError(t, err)
	var id int64
	require.NoError(t, conn.QueryRow(ctx, `INSERT INTO replay_requests (batch, tenant, class, requester_issuer, requester_subject, requester_email,
            policy_version, rate, intent_hash, item_count)
        VALUES ('b1', 'acme', 'manual', 'https://idp.example', 'oncall', 'oncall@example.com', 'v1', 1, '\x00', 1) RETURNING id`).Scan(&id))
	_, err = conn.Exec(ctx, `INSERT INTO replay_approvals (request_id, approver_issuer, approver_subject, approver_email, intent_hash)
        VALUES ($1, 'https://idp.example', 'approver1', 'a1-new@example.com', '\x00')`, id)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO replay_approval_addresses (request_id, approver_issuer, approver_subject, approver_email)
        VALUES ($1, 'https://idp.example', 'approver1', 'a1@example.com'), ($1, 'https://idp.example', 'approver1', 'a1-new@example.com')`, id)
	require.NoError(t, err)
	require.NoError(t, migrations.MigrateTo(ctx, conn, 57))

	rows, err := conn.Query(ctx, `SELECT subject || ' ' || email FROM identity_addresses ORDER BY subject, email`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{"approver1 a1-new@example.com", "approver1 a1@example.com", "oncall oncall-c@example.com", "oncall oncall@example.com"}, got)
	var gone bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass('replay_approval_addresses') IS NULL`).Scan(&gone))
	assert.True(t, gone, "replay_approval_addresses is replaced")
}
