package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev36SignInStartedOutsideLeavesTheSignedInAlone: another site's
// page, or a link sent in a chat, sends a signed-in browser to
// /auth/login (a top-level GET carries the session cookie). It started a
// new sign-in, which with the provider's single sign-on came back at once:
// the person's sign-in ended, their browser's session was cleared, and an
// auth.login row was written, none of it asked for. A browser signed in
// goes to the return path instead, and nothing starts; the console's own
// pages still start a sign-in as before, and so does anyone's browser
// when nobody is signed in in it.
func TestRev36SignInStartedOutsideLeavesTheSignedInAlone(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	flowCookies := func(resp testfactory.Response) (n int) {
		for _, ck := range resp.Header.Values("Set-Cookie") {
			if strings.HasPrefix(ck, "quarantine_login_") || strings.HasPrefix(ck, "__Host-quarantine_login_") {
				n++
			}
		}
		return n
	}

	for name, tc := range map[string]struct{ site, returnTo, lands string }{
		"CrossSite":         {"cross-site", "/audit", "/audit"},
		"SameSite":          {"same-site", "/audit", "/audit"},
		"Nothing":           {"none", "/deadletters?tenant=acme", "/deadletters?tenant=acme"},
		"AnotherOriginBack": {"cross-site", "https://evil.example/", "/"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, u := b.SignIn(t, "acme:viewer")
			logins := b.AuditCount(t, "action = 'auth.login' AND actor_subject = $1", u.Subject)
			resp := b.Do(t, c, http.MethodGet, "/auth/login?return_to="+url.QueryEscape(tc.returnTo), nil,
				map[string]string{"Sec-Fetch-Site": tc.site, "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"})
			require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
			assert.Equal(t, tc.lands, resp.Header.Get("Location"), "back to the (local) return path")
			assert.Zero(t, flowCookies(resp), "no sign-in started")
			var live bool
			require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT ended_at IS NULL FROM user_sessions WHERE subject = $1`, u.Subject).Scan(&live))
			assert.True(t, live, "the sign-in goes on")
			assert.Equal(t, logins, b.AuditCount(t, "action = 'auth.login' AND actor_subject = $1", u.Subject))
			assert.Equal(t, http.StatusOK, b.Do(t, c, http.MethodGet, "/", nil, nil).Status, "still signed in")
		})
	}

	t.Run("SameOrigin", func(t *testing.T) {
		t.Parallel()
		c, _ := b.SignIn(t, "acme:viewer")
		resp := b.Do(t, c, http.MethodGet, "/auth/login?return_to=/audit", nil,
			map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate"})
		require.Equal(t, http.StatusFound, resp.Status, resp.Body)
		assert.True(t, strings.HasPrefix(resp.Header.Get("Location"), b.IdP.Issuer), "to the identity provider: %s", resp.Header.Get("Location"))
		assert.Equal(t, 1, flowCookies(resp), "the console's own link starts a sign-in")
	})

	t.Run("NobodySignedIn", func(t *testing.T) {
		t.Parallel()
		resp := b.Do(t, testfactory.NoFollow(nil), http.MethodGet, "/auth/login?return_to=/audit", nil,
			map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"})
		require.Equal(t, http.StatusFound, resp.Status, resp.Body)
		assert.Equal(t, 1, flowCookies(resp), "a link to a page of the console signs in whoever follows it")
	})
}
