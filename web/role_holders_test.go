package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestEffectiveRoleHolders reads the admin page's "who holds which role":
// people holding roles through identity-provider groups (as their last
// sign-in reported them) are listed beside the bindings, with the group
// that gives the role; a group that merely looks like a role (no
// configured prefix) gives nothing and is not listed; an admin of one
// tenant sees that tenant's holders only.
func TestEffectiveRoleHolders(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	admin, root := b.SignIn(t, "*:admin")
	_, oncall := b.SignIn(t, "acme:oncall", "globex:oncall")
	_, approver := b.SignIn(t, "acme:approver")
	acmeAdmin, _ := b.SignIn(t, "acme:admin")

	// Someone whose provider puts them in "acme:admin" without the prefix:
	// at many providers people name their own groups.
	sneaky := authz.User{Actor: quarantine.Actor{Issuer: b.IdP.Issuer, Subject: "sneaky", Email: "sneaky@example.com", EmailVerified: true},
		Groups: []string{"acme:admin", "*:admin"}}
	_, err := b.Pool.Exec(ctx, `INSERT INTO user_directory (issuer, subject, email, email_verified, groups) VALUES ($1, $2, $3, true, $4)`,
		sneaky.Issuer, sneaky.Subject, sneaky.Email, sneaky.Groups)
	require.NoError(t, err)

	resp := b.Do(t, admin, "POST", "/admin/bindings", url.Values{"email": {"pat@example.com"}, "role": {"approver"}, "tenant": {"acme"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	type holder struct{ tenant, role, person, source string }
	holders := func(c *http.Client) []holder {
		t.Helper()
		resp := b.Do(t, c, "GET", "/admin/bindings", nil, nil)
		require.Equal(t, http.StatusOK, resp.Status)
		var out []holder
		byID(resp.Doc(t), "holder-row").Each(func(_ int, s *goquery.Selection) {
			out = append(out, holder{s.AttrOr("data-tenant", ""), s.AttrOr("data-role", ""), s.AttrOr("data-person", ""),
				strings.Fields(text(s.Find(`[data-testid="holder-source"]`)) + " ")[0] + " " + text(s.Find("code"))})
		})
		return out
	}
	all := holders(admin)
	for _, want := range []holder{
		{"*", "admin", root.Email, "group " + testfactory.GroupPrefix + "*:admin"},
		{"acme", "oncall", oncall.Email, "group " + testfactory.GroupPrefix + "acme:oncall"},
		{"globex", "oncall", oncall.Email, "group " + testfactory.GroupPrefix + "globex:oncall"},
		{"acme", "approver", approver.Email, "group " + testfactory.GroupPrefix + "acme:approver"},
		{"acme", "approver", "pat@example.com", "binding "},
	} {
		assert.Contains(t, all, want)
	}
	for _, h := range all {
		assert.NotEqual(t, "sneaky@example.com", h.person, "a group without the prefix gives no role: %+v", h)
	}
	for _, h := range holders(acmeAdmin) {
		assert.Equal(t, "acme", h.tenant, "an admin of acme sees acme's holders: %+v", h)
	}
}

// TestGroupRulesOfOtherTenantsHidden: the admin page lists the configured
// group mappings (AUTHZ_GROUP_ROLES); an admin of one tenant sees the
// mappings that give roles in that tenant only, as with bindings and
// holders: another tenant's mappings (its name, its groups) are not theirs
// to see.
func TestGroupRulesOfOtherTenantsHidden(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(cfg *app.Config) {
		cfg.Groups.Extra = map[string][]authz.TenantRole{
			"platform-oncall": {{Tenant: "acme", Role: authz.RoleOncall}, {Tenant: "initech", Role: authz.RoleOncall}},
			"initech-secops":  {{Tenant: "initech", Role: authz.RoleAuditor}},
			"everyone-audits": {{Tenant: authz.AllTenants, Role: authz.RoleAuditor}},
		}
	}})
	admin, _ := b.SignIn(t, "*:admin")
	acmeAdmin, _ := b.SignIn(t, "acme:admin")
	rules := func(c *http.Client) []string {
		t.Helper()
		resp := b.Do(t, c, "GET", "/admin/bindings", nil, nil)
		require.Equal(t, http.StatusOK, resp.Status)
		var out []string
		byID(resp.Doc(t), "group-rule-row").Each(func(_ int, s *goquery.Selection) {
			out = append(out, strings.Join(s.Find("td").Map(func(_ int, td *goquery.Selection) string { return text(td) }), " "))
		})
		return out
	}
	assert.Len(t, rules(admin), 4, "an admin of every tenant sees every mapping")
	acme := rules(acmeAdmin)
	assert.Equal(t, []string{"platform-oncall oncall acme"}, acme)
	page := b.Do(t, acmeAdmin, "GET", "/admin/bindings", nil, nil)
	assert.NotContains(t, page.Body, "initech", "nothing of another tenant")
}
