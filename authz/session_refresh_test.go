package authz

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// browserToken is the session cookie's token of the bundle's browser.
func (b *loginBundle) browserToken(t *testing.T) string {
	t.Helper()
	for _, ck := range b.client.Jar.Cookies(mustURL(t, b.srv.URL)) {
		if ck.Name == SessionCookie {
			return ck.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

// TestStaleIdentityNotServedPastTheClaim: a request that finds the due
// refresh claimed by another keeps the identity it read only while the
// groups are at most refreshClaim past due; past that, it waits for the
// refresh, and a claim that neither refreshes nor lapses in that time
// signs nobody in on the request (the session itself is left as it is).
func TestStaleIdentityNotServedPastTheClaim(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	b.login.claimWait = 500 * time.Millisecond // a claim's whole time, in short
	ctx := context.Background()
	b.signIn(t)

	// Due by a few seconds, claimed by another request: the identity read
	// is kept.
	_, err := b.db.Pool.Exec(ctx, `UPDATE user_sessions SET refreshed_at = now() - interval '1 hour 5 seconds', refreshing_until = now() + interval '30 seconds'`)
	require.NoError(t, err)
	_, ok := b.me(t)
	assert.True(t, ok, "a refresh under way, just due: the identity read is kept")

	// Long past due, claimed by a request that will not finish: nobody is
	// signed in on this request once the claim's time is up.
	_, err = b.db.Pool.Exec(ctx, `UPDATE user_sessions SET refreshed_at = now() - interval '2 hours', refreshing_until = now() + interval '1 hour'`)
	require.NoError(t, err)
	u, ok := b.me(t)
	assert.False(t, ok, "groups two hours old were served while another request held the refresh: %v", u.Groups)
	var ended bool
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT ended_at IS NOT NULL FROM user_sessions`).Scan(&ended))
	assert.False(t, ended, "the holder of the claim decides the session's fate")

	// The claim lapses (its holder died): the next request refreshes.
	_, err = b.db.Pool.Exec(ctx, `UPDATE user_sessions SET refreshing_until = now() - interval '1 second'`)
	require.NoError(t, err)
	b.user.Groups = []string{"acme:viewer"}
	b.idp.Add(*b.user)
	u, ok = b.me(t)
	require.True(t, ok)
	assert.Equal(t, []string{"acme:viewer"}, u.Groups, "refreshed by the request that found the claim lapsed")
}
