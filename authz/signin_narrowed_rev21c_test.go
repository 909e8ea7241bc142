package authz

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevGov21SignInNarrowedKeptByOtherSession: the sibling of
// TestRevGov20GroupRemovedKeptByOtherSession through a sign-in instead of
// a refresh. The provider takes the person out of a group; she then signs
// in on a second browser. That sign-in reads the provider's answer, rewrites
// her directory entry without the group and records it in the audit log
// (auth.login, after: her grants). Her first browser's session, whose groups
// are not due yet, goes on being answered with the group the console has
// just recorded she no longer has, for up to the refresh interval: a
// narrowing seen at a refresh makes the person's other sessions due
// (markOthersDue), one seen at a sign-in does not.
func TestRevGov21SignInNarrowedKeptByOtherSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	b.signIn(t)
	laptop := b.client
	u, ok := b.me(t)
	require.True(t, ok)
	require.Contains(t, u.Groups, "acme:oncall", "signed in on the laptop as an on-call of acme")

	// Out of acme:oncall at the provider; then a sign-in on the phone.
	b.user.Groups = []string{"acme:viewer"}
	b.idp.Add(*b.user)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	phone := &http.Client{Jar: jar, CheckRedirect: laptop.CheckRedirect}
	b.client = phone
	b.signIn(t)
	u, ok = b.me(t)
	require.True(t, ok)
	require.Equal(t, []string{"acme:viewer"}, u.Groups, "the phone's sign-in read the provider's answer")
	var recorded bool
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT after->'groups' = '["acme:viewer"]'::jsonb FROM audit_log
        WHERE action = 'auth.login' ORDER BY seq DESC LIMIT 1`).Scan(&recorded))
	require.True(t, recorded, "the console recorded, with the sign-in, that she holds acme:viewer only")

	b.client = laptop
	u, ok = b.me(t)
	assert.False(t, ok && slices.Contains(u.Groups, "acme:oncall"),
		"the console recorded at her sign-in that the provider took her out of acme:oncall, yet her other session is still answered with it: %v",
		u.Groups)
}
