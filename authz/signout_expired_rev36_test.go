package authz

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRev36SignOutAfterIdleTimeoutRecordsTheEnd: "Sign out" pressed once
// the browser's session passed its idle deadline ended the sign-in it
// named ("signed out after the session expired") with no audit row at
// all: the cleanup, which writes auth.session_end for a timed-out sign-in,
// never saw it, since its browser session was gone by then. The sign-in
// ends with its auth.session_end row, under the person it signed in;
// there is still no auth.logout row (nobody was signed in to sign out).
func TestRev36SignOutAfterIdleTimeoutRecordsTheEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	b.signIn(t)
	_, err := b.db.Pool.Exec(ctx, `UPDATE sessions SET expiry = now() - interval '1 second'`)
	require.NoError(t, err)

	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/auth/logout", nil)
	require.NoError(t, err)
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	var reason string
	var token *string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT ended_reason, refresh_token FROM user_sessions`).Scan(&reason, &token))
	require.Equal(t, "signed out after the session expired", reason, "the sign-in ended")
	assert.Nil(t, token, "its refresh token dropped")
	// The cleanup finds nothing more to end or record.
	require.NoError(t, (&sessionStore{pool: b.db.Pool}).removeExpired(ctx))

	ends, err := audit.List(ctx, b.db.Pool, audit.Filter{Action: audit.ActionSessionEnd})
	require.NoError(t, err)
	require.Len(t, ends.Entries, 1, "the end of the sign-in is in the log, once")
	assert.Equal(t, adaSub, ends.Entries[0].Actor.Subject, "under the person it signed in")
	assert.Equal(t, "signed out after the session expired", ends.Entries[0].Reason)
	logouts, err := audit.List(ctx, b.db.Pool, audit.Filter{Action: audit.ActionLogout})
	require.NoError(t, err)
	assert.Empty(t, logouts.Entries, "nobody was signed in to sign out")
}
