package authz

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestNarrowingJudgesEachSessionByWhatItHolds: a refresh or a sign-in
// makes due the person's other live sessions that grant something the
// provider's answer lacks (markNarrowedDue), each judged by what it holds.
// A refresh that takes nothing from its own session still makes due one
// signed in since with a group the answer lacks, and leaves the sessions
// that grant no more than the answer as they were; a sign-in does the
// same.
func TestNarrowingJudgesEachSessionByWhatItHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	person := func(groups ...string) User {
		return User{Actor: quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-ada", Email: "ada@example.com"}, Groups: groups}
	}
	nothing := func(pgx.Tx) error { return nil }
	signIn := func(u User) string {
		id, err := createSession(ctx, db.Pool, u, "", time.Hour, nothing)
		require.NoError(t, err)
		return id
	}
	due := func() map[string]bool {
		rows, err := db.Pool.Query(ctx, `SELECT id, refreshed_at = 'epoch' FROM user_sessions`)
		require.NoError(t, err)
		out := map[string]bool{}
		for rows.Next() {
			var id string
			var isDue bool
			require.NoError(t, rows.Scan(&id, &isDue))
			out[id] = isDue
		}
		require.NoError(t, rows.Err())
		return out
	}

	tablet := signIn(person("acme:viewer"))
	desk := signIn(person("acme:viewer"))
	laptop := signIn(person("acme:oncall", "acme:viewer"))
	assert.Equal(t, map[string]bool{tablet: false, desk: false, laptop: false}, due(), "a sign-in that grants more makes nobody due")

	require.NoError(t, storeRefreshed(ctx, db.Pool, tablet, person("acme:viewer"), person("acme:viewer"), "", false))
	assert.Equal(t, map[string]bool{tablet: false, desk: false, laptop: true}, due(),
		"the tablet's refresh took nothing from the tablet, but the laptop holds acme:oncall, which the answer lacks")

	_, err := db.Pool.Exec(ctx, `UPDATE user_sessions SET refreshed_at = now()`)
	require.NoError(t, err)
	phone := signIn(person())
	assert.Equal(t, map[string]bool{tablet: true, desk: true, laptop: true, phone: false}, due(),
		"a sign-in without a group makes every session holding one due")
}
