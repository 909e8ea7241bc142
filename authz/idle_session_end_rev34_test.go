package authz

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRev34TimedOutSessionEndsItsSignIn: a browser session past its idle
// deadline was deleted by the cleanup, but the sign-in it held stayed
// live: "signed in" on the admins' Sessions page and holding its refresh
// token for the rest of its lifetime, and not even Sign out could end it
// any more. The cleanup ends the sign-ins only the removed sessions held,
// audited; one another live browser session still holds is kept.
func TestRev34TimedOutSessionEndsItsSignIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	b.signIn(t)
	people, err := ActivePeople(ctx, b.db.Pool)
	require.NoError(t, err)
	require.Len(t, people, 1)
	store := &sessionStore{pool: b.db.Pool}

	require.NoError(t, store.removeExpired(ctx))
	people, err = ActivePeople(ctx, b.db.Pool)
	require.NoError(t, err)
	require.Len(t, people, 1, "a live browser session keeps its sign-in")

	_, err = b.db.Pool.Exec(ctx, `UPDATE sessions SET expiry = now() - interval '1 minute'`)
	require.NoError(t, err)
	require.NoError(t, store.removeExpired(ctx))
	people, err = ActivePeople(ctx, b.db.Pool)
	require.NoError(t, err)
	assert.Empty(t, people, "the timed-out session's sign-in is signed in no more")
	var token *string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT refresh_token FROM user_sessions`).Scan(&token))
	assert.Nil(t, token, "its refresh token dropped")
	e, err := audit.List(ctx, b.db.Pool, audit.Filter{Action: "auth.session_end"})
	require.NoError(t, err)
	require.Len(t, e.Entries, 1, "ended with its audit row")
	assert.Equal(t, adaSub, e.Entries[0].Actor.Subject)
	assert.Equal(t, "the browser session timed out", e.Entries[0].Reason)
}
