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

// TestRev43MigrateRekeysStaleMailboxes: an address kept with the key an
// earlier release's replaypolicy.Mailbox wrote (before Gmail's dots and
// googlemail.com were one mailbox) is keyed again by `console migrate`, so
// the database links ann.smith@gmail.com and annsmith@googlemail.com as the
// rules compare them; a key that is Mailbox's already is left alone, and a
// second run changes nothing.
func TestRev43MigrateRekeysStaleMailboxes(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	newest, err := migrations.Newest()
	require.NoError(t, err)
	conn := db.OwnerAt(t, newest)

	// The keys the release before wrote: case folded, dots and domain kept.
	_, err = conn.Exec(ctx, `INSERT INTO identity_addresses (issuer, subject, email, mailbox, verified) VALUES
        ('https://dex.example', 'ann-gh', 'ann.smith@gmail.com', 'ANN.SMITH@gmail.com', true),
        ('https://dex.example', 'ann-gh', 'ann.smith@gmail.com', 'ANN.SMITH@gmail.com', false),
        ('https://dex.example', 'ann-old', 'annsmith@googlemail.com', 'ANNSMITH@googlemail.com', true),
        ('https://dex.example', 'ann-google', 'annsmith@gmail.com', $1, true),
        ('https://dex.example', 'bob', 'bob.smith@example.com', $2, true)`,
		replaypolicy.Mailbox("annsmith@gmail.com"), replaypolicy.Mailbox("bob.smith@example.com"))
	require.NoError(t, err)
	keys := func() []string {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT subject || ' ' || mailbox || ' ' || verified FROM identity_addresses
            WHERE issuer = 'https://dex.example' ORDER BY subject, verified`)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return got
	}

	xmin := func(subject string) (x uint32) {
		t.Helper()
		require.NoError(t, conn.QueryRow(ctx, `SELECT max(xmin::text::bigint) FROM identity_addresses WHERE subject = $1`, subject).Scan(&x))
		return x
	}
	bob, annGoogle := xmin("bob"), xmin("ann-google")
	_, err = migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	assert.Equal(t, bob, xmin("bob"), "a key that is Mailbox's already was written again")
	assert.Equal(t, annGoogle, xmin("ann-google"), "a key that is Mailbox's already was written again")
	ann := replaypolicy.Mailbox("annsmith@gmail.com")
	want := []string{
		"ann-gh " + ann + " false",
		"ann-gh " + ann + " true",
		"ann-google " + ann + " true",
		"ann-old " + ann + " true",
		"bob " + replaypolicy.Mailbox("bob.smith@example.com") + " true",
	}
	assert.Equal(t, want, keys(), "every key is Mailbox's now")

	var before uint32
	require.NoError(t, conn.QueryRow(ctx, `SELECT max(xmin::text::bigint) FROM identity_addresses`).Scan(&before))
	_, err = migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	var after uint32
	require.NoError(t, conn.QueryRow(ctx, `SELECT max(xmin::text::bigint) FROM identity_addresses`).Scan(&after))
	assert.Equal(t, want, keys())
	assert.Equal(t, before, after, "a second run rewrites no row")
}
