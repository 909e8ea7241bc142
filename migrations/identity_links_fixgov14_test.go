package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestFixGov14IdentityLinksBackfilled: migration 0059 keeps each address
// seen verified as a row of its own (the directory's, a request's, an
// approval's), records who approved each request (replay_request_approvers)
// and, after the SQL, Migrate keys every address kept before it by
// replaypolicy.Mailbox, which SQL cannot compute.
func TestFixGov14IdentityLinksBackfilled(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	conn := db.OwnerAt(t, 58)

	_, err := conn.Exec(ctx, `INSERT INTO user_directory (issuer, subject, email, email_verified) VALUES
        ('https://idp.example', 'oncall', '"Oncall+ops"@EXÄMPLE.com.', true)`)
	require.NoError(t, err)
	var id int64
	require.NoError(t, conn.QueryRow(ctx, `INSERT INTO replay_requests (batch, tenant, class, requester_issuer, requester_subject, requester_email,
            policy_version, rate, intent_hash, item_count)
        VALUES ('b1', 'acme', 'manual', 'https://idp.example', 'oncall', 'oncall@example.com', 'v1', 1, '\x00', 1) RETURNING id`).Scan(&id))
	_, err = conn.Exec(ctx, `INSERT INTO replay_approvals (request_id, approver_issuer, approver_subject, approver_email, intent_hash)
        VALUES ($1, 'https://idp.example', 'approver1', 'A1@example.com', '\x00')`, id)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO identity_addresses (issuer, subject, email) VALUES
        ('https://idp.example', 'oncall', '"Oncall+ops"@EXÄMPLE.com.'), ('https://idp.example', 'approver1', 'A1@example.com')`)
	require.NoError(t, err)
	_, err = migrations.Migrate(ctx, conn)
	require.NoError(t, err)

	rows, err := conn.Query(ctx, `SELECT subject || ' ' || email || ' ' || mailbox || ' ' || verified FROM identity_addresses
        ORDER BY subject, email, verified`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	box := replaypolicy.Mailbox(`"Oncall+ops"@EXÄMPLE.com.`)
	assert.Equal(t, replaypolicy.Mailbox("oncall@xn--exmple-cua.com"), box, "the key the rules compare by")
	assert.Equal(t, []string{
		"approver1 A1@example.com " + replaypolicy.Mailbox("a1@example.com") + " false",
		`oncall "Oncall+ops"@EXÄMPLE.com. ` + box + " false",
		`oncall "Oncall+ops"@EXÄMPLE.com. ` + box + " true",
	}, got)
	var approvers []string
	require.NoError(t, conn.QueryRow(ctx, `SELECT array_agg(approver_subject) FROM replay_request_approvers WHERE request_id = $1`, id).
		Scan(&approvers))
	assert.Equal(t, []string{"approver1"}, approvers)

	_, err = conn.Exec(ctx, `INSERT INTO identity_addresses (issuer, subject, email) VALUES ('https://idp.example', 'x', 'x@example.com')`)
	assert.Error(t, err, "a new row without its mailbox key")
}
