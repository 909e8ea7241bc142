package authz

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAbortedRefreshKeepsNoRevokedGroups (review rev-authn): a person the
// provider no longer accepts (removed from the group, disabled) whose
// refresh is due sends a request and drops it while the console asks the
// provider. The refresh runs on the request's context, so the token call
// fails with "context canceled" (not the provider's invalid_grant), and
// endAtRefresh, on the same canceled context, cannot end the session: it
// stays live, and the claim (refreshing_until, 30 s) makes every other
// request of theirs meanwhile answer with the groups of before
// (Current: "another request is refreshing"). Dropping one request every
// 30 s keeps revoked groups for the session's whole lifetime.
func TestAbortedRefreshKeepsNoRevokedGroups(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	b.signIn(t)
	ctx := context.Background()
	// The provider refuses this person from now on.
	_, err := b.db.Pool.Exec(ctx, `UPDATE user_sessions SET refresh_token = 'revoked-at-the-provider'`)
	require.NoError(t, err)
	b.ageSessions(t)

	srvURL, err := url.Parse(b.srv.URL)
	require.NoError(t, err)
	var token string
	for _, ck := range b.client.Jar.Cookies(srvURL) {
		if ck.Name == SessionCookie {
			token = ck.Value
		}
	}
	require.NotEmpty(t, token)

	// The attacker's request: its client goes away while the provider is
	// asked (the server cancels the request's context).
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	reqCtx, err = b.login.sessions.Load(reqCtx, token)
	require.NoError(t, err)
	done := make(chan struct{})
	abort := func() {
		cancel()
		// Let the console give up on the provider before it answers (a
		// console that goes on without the client waits here a second,
		// then reads the provider's refusal).
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
	}
	b.atToken.Store(&abort)
	go func() {
		defer close(done)
		_, _, _ = b.login.Current(reqCtx)
	}()
	<-done

	u, ok := b.me(t)
	assert.False(t, ok, "the provider refused the person at the refresh that was due; yet the next request is signed in with groups %v", u.Groups)
	var ended bool
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT ended_at IS NOT NULL FROM user_sessions`).Scan(&ended))
	assert.True(t, ended, "the session whose refresh is due and refused must end")
}
