package e2e

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// signInThroughDex signs in the way a person does: the console sends the
// browser to Dex, Dex shows its login page, the person posts the form, Dex
// sends them back with a code. No cookie is minted, no endpoint skipped.
func signInThroughDex(t *testing.T, c *Console, email, password string) (*http.Client, *goquery.Document) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar}
	resp, err := client.Get(c.URL + "/auth/login")
	require.NoError(t, err)
	page, err := goquery.NewDocumentFromReader(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	form := page.Find("form").First()
	action, ok := form.Attr("action")
	require.True(t, ok, "Dex's login page has a form: %s", resp.Request.URL)
	target, err := resp.Request.URL.Parse(action)
	require.NoError(t, err)
	resp, err = client.PostForm(target.String(), url.Values{"login": {email}, "password": {password}})
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Request.URL.String(), c.URL), "back on the console, at %s", resp.Request.URL)
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	require.NoError(t, err)
	return client, doc
}

func TestDexLoginShowsUserRoles(t *testing.T) {
	t.Parallel()
	c, _ := startConsole(t)
	cases := []struct {
		email, name string
		roles       []string
	}{
		{"oncall@example.com", "Olga Oncall", []string{"acme", "globex", "oncall"}},
		{"approver@example.com", "Arun Approver", []string{"acme", "globex", "approver"}},
		{"approver2@example.com", "Bea Approver", []string{"acme", "globex", "approver"}},
		{"auditor@example.com", "Ada Auditor", []string{"all tenants", "auditor"}},
		{"admin@example.com", "Sam Admin", []string{"all tenants", "admin"}},
		{"viewer@example.com", "Vic Viewer", []string{"acme", "viewer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, doc := signInThroughDex(t, c, tc.email, DemoPassword)
			assert.Equal(t, tc.name, strings.TrimSpace(doc.Find(`[data-testid="user-name"]`).Text()))
			roles := doc.Find(`[data-testid="user-roles"]`).Text()
			for _, want := range tc.roles {
				assert.Contains(t, roles, want)
			}
		})
	}

	t.Run("WrongPassword", func(t *testing.T) {
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		client := &http.Client{Jar: jar}
		resp, err := client.Get(c.URL + "/auth/login")
		require.NoError(t, err)
		page, err := goquery.NewDocumentFromReader(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		action, _ := page.Find("form").First().Attr("action")
		target, err := resp.Request.URL.Parse(action)
		require.NoError(t, err)
		resp, err = client.PostForm(target.String(), url.Values{"login": {"oncall@example.com"}, "password": {"wrong"}})
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.False(t, strings.HasPrefix(resp.Request.URL.String(), c.URL), "still at Dex")
		assert.Contains(t, strings.ToLower(string(body)), "invalid")
		me, err := client.Get(c.URL + "/audit")
		require.NoError(t, err)
		me.Body.Close()
		assert.NotEqual(t, c.URL+"/audit", me.Request.URL.String(), "not signed in: sent to sign in again")
	})
}
