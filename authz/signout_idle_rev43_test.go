package authz

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev43SignOutOfASessionThisReplicaEndedForIdling: a session idle
// longer than this replica's timeout (1 h), whose expiry another replica,
// with a longer timeout, set hours ahead. The session manager finds none;
// "Sign out" then removed only a session past its expiry, so the sign-in
// stayed live with its refresh token, and its browser session stayed
// usable on the other replica. It goes now, and so does the sign-in, as
// for a session past its expiry; the cleanup ends such sessions too.
func TestRev43SignOutOfASessionThisReplicaEndedForIdling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	b.signIn(t)
	_, err := b.db.Pool.Exec(ctx, `UPDATE sessions SET idle_from = now() - interval '2 hours', expiry = now() + interval '7 hours'`)
	require.NoError(t, err)

	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/auth/logout", nil)
	require.NoError(t, err)
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	var reason *string
	var token *string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT ended_reason, refresh_token FROM user_sessions`).Scan(&reason, &token))
	require.NotNil(t, reason, "the sign-in the person signed out of is still live")
	assert.Equal(t, "signed out after the session expired", *reason)
	assert.Nil(t, token, "its refresh token kept")
	var left int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM sessions`).Scan(&left))
	assert.Zero(t, left, "the browser session another replica would still serve is kept")
}

// TestRev43CleanupEndsSessionsIdleLongerThanItsTimeout: the cleanup of a
// replica removes a browser session idle longer than its own timeout, and
// ends the sign-in only it held, though another replica set its expiry
// hours ahead (a timeout lowered: the sessions page no longer lists
// people idle past it as signed in).
func TestRev43CleanupEndsSessionsIdleLongerThanItsTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	b.signIn(t)
	_, err := b.db.Pool.Exec(ctx, `UPDATE sessions SET idle_from = now() - interval '2 hours', expiry = now() + interval '7 hours'`)
	require.NoError(t, err)
	require.NoError(t, (&sessionStore{pool: b.db.Pool, idle: 8 * time.Hour}).removeExpired(ctx))
	var n int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM sessions`).Scan(&n))
	assert.Equal(t, 1, n, "a replica whose timeout is 8 h removed a session idle 2 h")

	require.NoError(t, (&sessionStore{pool: b.db.Pool, idle: time.Hour}).removeExpired(ctx))
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM sessions`).Scan(&n))
	assert.Zero(t, n, "a replica whose timeout is 1 h kept a session idle 2 h")
	var reason *string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT ended_reason FROM user_sessions`).Scan(&reason))
	require.NotNil(t, reason)
	assert.Equal(t, "the browser session timed out", *reason)
}
