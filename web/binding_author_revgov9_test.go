package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevGov9BindingAuthorIsUnverifiedOrBlank: a role binding records who
// added it as authz.Bindings.Add's actor.Email (role_bindings.created_by),
// with no verified flag and no identity. The bindings page then says
// "by <address>" of an admin whose provider never verified the address,
// unmarked (a colleague's address passes for that colleague granting a
// role), and nothing at all of an admin whose provider sends no email
// claim: who granted a role is not shown truly on the page admins review
// access with.
func TestRevGov9BindingAuthorIsUnverifiedOrBlank(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	const dana = "dana@example.com"
	claimant, _ := b.SignInAs(t, testidp.Person{ID: "claimant", Email: dana, EmailVerified: false}, "*:admin")
	noEmail, _ := b.SignInAs(t, testidp.Person{ID: "admin-without-email"}, "*:admin")
	viewer, _ := b.SignIn(t, "*:admin")

	add := func(c *http.Client, email string) {
		t.Helper()
		resp := b.Do(t, c, "POST", "/admin/bindings", url.Values{"email": {email}, "role": {"viewer"}, "tenant": {"acme"}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	}
	add(claimant, "granted-by-claimant@example.com")
	add(noEmail, "granted-by-no-email@example.com")

	added := map[string]string{}
	b.Do(t, viewer, "GET", "/admin/bindings", nil, nil).Doc(t).Find(`[data-testid="binding-row"]`).Each(func(_ int, row *goquery.Selection) {
		who := strings.TrimSpace(row.Find(`[data-testid="binding-email"]`).Text())
		added[who] = strings.Join(strings.Fields(row.Find(`td[data-label="Added"]`).Text()), " ")
	})
	require.Contains(t, added, "granted-by-claimant@example.com")
	require.Contains(t, added, "granted-by-no-email@example.com")
	by := added["granted-by-claimant@example.com"]
	assert.False(t, strings.Contains(by, dana) && !strings.Contains(by, "unverified"),
		"the binding's author is shown as %s, unmarked, though the provider never verified it: %q", dana, by)
	assert.Contains(t, added["granted-by-no-email@example.com"], "by ",
		"a binding added by an admin without an email claim names nobody: %q", added["granted-by-no-email@example.com"])
}
