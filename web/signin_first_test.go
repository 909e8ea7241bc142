package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestSignOutAfterTheSessionEnded: "Sign out" pressed once the browser's
// session ended by itself still signs out: the expired row goes, the
// sign-in it named ends (the admins' Sessions page stops counting it), the
// cookie is cleared and the browser goes where a sign-out goes. Nobody is
// signed in, so no auth.logout row is written. A post another site
// started is refused as every such post is.
func TestSignOutAfterTheSessionEnded(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := t.Context()
	base, err := url.Parse(b.URL())
	require.NoError(t, err)
	hasSessionCookie := func(c *http.Client) bool {
		for _, ck := range c.Jar.Cookies(base) {
			if ck.Name == authz.SessionCookie {
				return true
			}
		}
		return false
	}
	expire := func(t *testing.T, c *http.Client) (token, signIn string) {
		token = b.SessionCookie(t, c).Value
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT user_session FROM sessions WHERE token = $1`, token).Scan(&signIn))
		_, err := b.Pool.Exec(ctx, `UPDATE sessions SET expiry = now() - interval '1 second' WHERE token = $1`, token)
		require.NoError(t, err)
		return token, signIn
	}

	t.Run("Success", func(t *testing.T) {
		c, u := b.SignIn(t, "acme:viewer")
		token, signIn := expire(t, c)
		resp := b.Do(t, c, http.MethodPost, "/auth/logout", url.Values{}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		assert.Equal(t, "/signed-out", resp.Header.Get("Location"))
		assert.False(t, hasSessionCookie(c), "the cookie is cleared")
		var rows int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE token = $1`, token).Scan(&rows))
		assert.Zero(t, rows, "the expired row is gone")
		var reason string
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT ended_reason FROM user_sessions WHERE id = $1`, signIn).Scan(&reason))
		assert.Equal(t, "signed out after the session expired", reason)
		assert.Zero(t, b.AuditCount(t, "action = 'auth.logout' AND actor_subject = $1", u.Subject))
	})

	t.Run("NoSession", func(t *testing.T) {
		resp := b.Do(t, testfactory.NoFollow(nil), http.MethodPost, "/auth/logout", url.Values{}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		assert.Equal(t, "/signed-out", resp.Header.Get("Location"))
	})

	t.Run("CrossSite", func(t *testing.T) {
		c, _ := b.SignIn(t, "acme:viewer")
		token, signIn := expire(t, c)
		resp := b.Do(t, c, http.MethodPost, "/auth/logout", url.Values{},
			map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
		assert.Equal(t, http.StatusForbidden, resp.Status, resp.Body)
		var rows int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE token = $1`, token).Scan(&rows))
		assert.Equal(t, 1, rows, "another site's post changes nothing")
		var reason string
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT ended_reason FROM user_sessions WHERE id = $1`, signIn).Scan(&reason))
		assert.Empty(t, reason)
	})
}

// TestRequestAfterTheSessionEnded: what each kind of request that needs a
// signed-in person gets once the session ended. A browser's form gets a
// page (401) whose sign-in comes back to the page the form was on (its
// Referer, when it is this host's page), never JSON; a person's htmx
// request is sent to the sign-in (HX-Redirect), a poll is not; other
// clients get JSON.
func TestRequestAfterTheSessionEnded(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	_, err := b.Pool.Exec(t.Context(), `UPDATE sessions SET expiry = now() - interval '1 second' WHERE token = $1`, b.SessionCookie(t, c).Value)
	require.NoError(t, err)
	form := url.Values{"tenant": {"acme"}, "group": {strings.Repeat("a", 16)}, "note": {"n"}, "return_to": {"/groups"}}
	browser := func(referer string) map[string]string {
		return map[string]string{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "Referer": referer}
	}

	t.Run("BrowserForm", func(t *testing.T) {
		resp := b.Do(t, c, http.MethodPost, "/groups/note", form, browser(b.URL()+"/groups?state=all"))
		require.Equal(t, http.StatusUnauthorized, resp.Status)
		assert.Contains(t, resp.Header.Get("Content-Type"), "text/html")
		link := resp.Doc(t).Find(`[data-testid="sign-in-first-link"]`)
		require.Equal(t, 1, link.Length(), resp.Body)
		assert.Equal(t, "/auth/login?return_to="+url.QueryEscape("/groups?state=all"), link.AttrOr("href", ""))
	})

	t.Run("BrowserFormFromAnotherHost", func(t *testing.T) {
		// Another host's page is not where the sign-in comes back to: the
		// form's own page is (/groups/note → /groups).
		resp := b.Do(t, c, http.MethodPost, "/groups/note", form, browser("https://evil.example/deadletters"))
		require.Equal(t, http.StatusUnauthorized, resp.Status)
		assert.Equal(t, "/auth/login?return_to=%2Fgroups", resp.Doc(t).Find(`[data-testid="sign-in-first-link"]`).AttrOr("href", ""))
	})

	t.Run("Htmx", func(t *testing.T) {
		resp := b.Do(t, c, http.MethodPost, "/groups/note", form,
			map[string]string{"HX-Request": "true", "HX-Current-URL": b.URL() + "/groups", "Accept": "text/html, */*"})
		require.Equal(t, http.StatusUnauthorized, resp.Status)
		assert.Equal(t, "/auth/login?return_to=%2Fgroups", resp.Header.Get("HX-Redirect"), "a person's click goes to the sign-in")
		assert.JSONEq(t, `{"error":"Sign in first."}`, resp.Body)
	})

	t.Run("Poll", func(t *testing.T) {
		resp := b.Do(t, c, http.MethodGet, "/", nil,
			map[string]string{"HX-Request": "true", "HX-Current-URL": b.URL() + "/", authz.PollHeader: "1", "Accept": "text/html, */*"})
		require.Equal(t, http.StatusUnauthorized, resp.Status)
		assert.Empty(t, resp.Header.Get("HX-Redirect"), "nobody may be at the machine: no sign-in unasked")
		assert.JSONEq(t, `{"error":"Sign in first."}`, resp.Body)
	})

	t.Run("API", func(t *testing.T) {
		resp := b.Do(t, c, http.MethodPost, "/groups/note", form, nil)
		require.Equal(t, http.StatusUnauthorized, resp.Status)
		assert.JSONEq(t, `{"error":"Sign in first."}`, resp.Body)
	})
}
