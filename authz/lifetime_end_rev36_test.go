package authz

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRev36SignInPastItsLifetimeEndsAtTheNextRequest: a sign-in reached
// its lifetime while its browser session was live (the browser's own
// deadline, set on the console's clock, can come later than the sign-in's
// on the database's). The next request signed nobody in, but only took the
// sign-in off the browser's session: the sign-in stayed live in
// user_sessions, holding its refresh token, and the cleanup, finding the
// browser session naming none, never ended it; nothing was recorded until
// the row was deleted more than a day later. That request ends it, its
// refresh token dropped, with its auth.session_end row; the next ones,
// and the cleanup, find nothing more to end.
func TestRev36SignInPastItsLifetimeEndsAtTheNextRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	b.signIn(t)
	_, err := b.db.Pool.Exec(ctx, `UPDATE user_sessions SET expires_at = now() - interval '1 second'`)
	require.NoError(t, err)

	assert.Equal(t, http.StatusUnauthorized, b.get(t, b.srv.URL+"/me").StatusCode, "signed in no more")
	var ended bool
	var token *string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT ended_at IS NOT NULL, refresh_token FROM user_sessions`).Scan(&ended, &token))
	assert.True(t, ended, "the sign-in ended")
	assert.Nil(t, token, "its refresh token dropped")

	assert.Equal(t, http.StatusUnauthorized, b.get(t, b.srv.URL+"/me").StatusCode)
	_, err = b.db.Pool.Exec(ctx, `UPDATE sessions SET expiry = now() - interval '1 second'`)
	require.NoError(t, err)
	require.NoError(t, (&sessionStore{pool: b.db.Pool}).removeExpired(ctx))
	e, err := audit.List(ctx, b.db.Pool, audit.Filter{Action: audit.ActionSessionEnd})
	require.NoError(t, err)
	require.Len(t, e.Entries, 1, "its end recorded, once")
	assert.Equal(t, adaSub, e.Entries[0].Actor.Subject, "under the person it signed in")
}
