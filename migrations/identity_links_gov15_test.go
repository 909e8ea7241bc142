package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevGov15VerifiedSignInHistoryLinks: before migration 0059 the
// console kept every address it saw an identity with (identity_addresses,
// 0057) without saying whether it was verified, and since 0059 only
// addresses seen verified link identities beyond a request's people. The
// audit log recorded, for every sign-in and every action, whether the
// provider verified the actor's address (actor_email_verified). Account M
// signed in verified as r@x (the requester R's address) and later as
// m@x (what G holds now): after the upgrade, M must still link R and G
// through r@x, as it would had the sign-in come after 0059. Without it
// the walk from R never reaches M (its r@x is taken for merely claimed),
// and G approves R's request.
func TestRevGov15VerifiedSignInHistoryLinks(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	conn := db.OwnerAt(t, 58)

	const idp = "https://idp.example"
	m1 := quarantine.Actor{Issuer: idp, Subject: "m", Email: "R@x.example", EmailVerified: true}
	m2 := quarantine.Actor{Issuer: idp, Subject: "m", Email: "m@x.example", EmailVerified: true}
	claimed := quarantine.Actor{Issuer: idp, Subject: "c", Email: "g@x.example"} // not verified: links nothing
	for _, a := range []quarantine.Actor{m1, m2, claimed} {
		_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Actor: a, Action: "auth.login", Outcome: audit.OutcomeOK})
		require.NoError(t, err)
	}
	// What a console of schema 58 kept: each address seen, and the
	// directory's last word (m@x for M).
	_, err := conn.Exec(ctx, `INSERT INTO identity_addresses (issuer, subject, email) VALUES
        ($1, 'm', 'R@x.example'), ($1, 'm', 'm@x.example'), ($1, 'c', 'g@x.example'),
        ($1, 'r', 'r@x.example'), ($1, 'g', 'm@x.example')`, idp)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO user_directory (issuer, subject, email, email_verified) VALUES
        ($1, 'm', 'm@x.example', true), ($1, 'r', 'r@x.example', true), ($1, 'g', 'm@x.example', true)`, idp)
	require.NoError(t, err)

	_, err = migrations.Migrate(ctx, conn)
	require.NoError(t, err)

	linked := func(email string) []string {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT DISTINCT subject FROM identity_addresses WHERE mailbox = $1 AND verified ORDER BY subject`,
			replaypolicy.Mailbox(email))
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return got
	}
	assert.Equal(t, []string{"m", "r"}, linked("r@x.example"),
		"M's sign-in verified as R@x (audited before 0059) links M to R's mailbox")
	assert.Equal(t, []string{"g", "m"}, linked("m@x.example"))
	assert.Empty(t, linked("g@x.example"), "an address only claimed links nobody")
	var unkeyed int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM identity_addresses WHERE mailbox IS NULL`).Scan(&unkeyed))
	assert.Zero(t, unkeyed, "every address has its key")
}
