package migrations_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestFixAnchorMigrateAuditsTheMailboxesItRekeys (review fx-auditanchor):
// `console migrate` writes again the mailbox key of kept addresses
// (identity_addresses.mailbox), the key that links identities into one
// person for separation of duties: after Gmail's dots were dropped,
// ann.smith@gmail.com and annsmith@googlemail.com are ann's, whose other
// identity holds annsmith@gmail.com. Every other change to the links is
// audited; this one wrote no audit row. Now the transaction that writes
// the keys appends one entry, by "migrate", naming how many addresses it
// keyed and which identities the mailbox now links to which, and the
// chain still verifies; a migrate with nothing to write appends nothing.
func TestFixAnchorMigrateAuditsTheMailboxesItRekeys(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	newest, err := migrations.Newest()
	require.NoError(t, err)
	conn := db.OwnerAt(t, newest)
	entries := func() int {
		t.Helper()
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM audit_log`).Scan(&n))
		return n
	}

	_, err = migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	require.Zero(t, entries(), "a migrate with no key to write appends nothing")

	// The keys the release before wrote: case folded, dots and domain kept.
	_, err = conn.Exec(ctx, `INSERT INTO identity_addresses (issuer, subject, email, mailbox, verified) VALUES
        ('https://dex.example', 'ann-gh', 'ann.smith@gmail.com', 'ANN.SMITH@gmail.com', true),
        ('https://dex.example', 'ann-gh', 'ann.smith@gmail.com', 'ANN.SMITH@gmail.com', false),
        ('https://dex.example', 'ann-old', 'annsmith@googlemail.com', 'ANNSMITH@googlemail.com', false),
        ('https://dex.example', 'ann-google', 'annsmith@gmail.com', $1, true),
        ('https://dex.example', 'bob', 'bob.smith@example.com', $2, true)`,
		replaypolicy.Mailbox("annsmith@gmail.com"), replaypolicy.Mailbox("bob.smith@example.com"))
	require.NoError(t, err)
	_, err = audit.AppendFunc(ctx, db.Pool, audit.Event{Action: audit.ActionLogin, Outcome: audit.OutcomeOK})
	require.NoError(t, err)

	_, err = migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, 2, entries(), "one entry for the one batch that keyed addresses")
	var (
		actor, action, objectType, objectID, reason string
		after                                       []byte
	)
	require.NoError(t, conn.QueryRow(ctx, `SELECT actor_subject, action, object_type, object_id, reason, after FROM audit_log WHERE seq = 2`).
		Scan(&actor, &action, &objectType, &objectID, &reason, &after))
	assert.Equal(t, "migrate", actor)
	assert.Equal(t, audit.ActionIdentityRekeyed, action)
	assert.Equal(t, "identity_addresses mailbox", objectType+" "+objectID)
	assert.Contains(t, reason, "console migrate keyed 3 kept addresses again")
	assert.Contains(t, reason, "mailboxes that now link identities they did not link before: 1")
	var got map[string]any
	require.NoError(t, json.Unmarshal(after, &got))
	assert.Equal(t, map[string]any{
		"addresses": 3.0, "mailboxes_linking": 1.0,
		"linked": []any{map[string]any{
			"mailbox":    replaypolicy.Mailbox("annsmith@gmail.com"),
			"joined":     []any{"https://dex.example|ann-gh", "https://dex.example|ann-old (unverified)"},
			"already":    []any{"https://dex.example|ann-google"},
			"identities": 3.0,
		}},
	}, got)

	res, err := audit.Verify(ctx, db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	assert.True(t, res.OK(), "the chain goes on through the migrate's entry: %s", res.String())
	assert.EqualValues(t, 2, res.Rows)

	_, err = migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	assert.Equal(t, 2, entries(), "a second migrate keys nothing and appends nothing")
}
