package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/web"
)

// concretePath fills route parameters with values that exist or not; the
// permission check comes before any lookup.
func concretePath(p string) string {
	p = strings.ReplaceAll(p, ":seq", "1")
	p = strings.ReplaceAll(p, ":id", "1")
	return strings.ReplaceAll(p, "*", "app.css")
}

// TestRouteTablePermissions walks the route table: every route that is not
// public sends a stranger to sign in (pages) or answers 401, and every
// permission route answers 403 to a signed-in user without the permission,
// writing a denied audit row.
func TestRouteTablePermissions(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	anon := testfactory.NoFollow(nil)
	roleUsers := map[string][]string{
		"viewer": {"acme:viewer"}, "oncall": {"acme:oncall"}, "approver": {"acme:approver"},
		"auditor": {"*:auditor"}, "admin": {"*:admin"},
	}
	clients := map[string]*http.Client{}
	users := map[string]authz.User{}
	for role, groups := range roleUsers {
		clients[role], users[role] = b.SignIn(t, groups...)
	}
	routes := (&web.Server{}).Routes()
	require.NotEmpty(t, routes)
	checked := 0
	for _, r := range routes {
		path := concretePath(r.Path)
		switch r.Access {
		case web.AccessPublic:
			continue
		case web.AccessSignedIn, web.AccessPerm:
			resp := b.Do(t, anon, r.Method, path, url.Values{}, nil)
			if r.Method == http.MethodGet {
				assert.Equal(t, http.StatusFound, resp.Status, "%s %s unauthenticated", r.Method, r.Path)
				assert.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/auth/login?return_to="), "%s %s → %s", r.Method, r.Path, resp.Header.Get("Location"))
			} else {
				assert.Equal(t, http.StatusUnauthorized, resp.Status, "%s %s unauthenticated", r.Method, r.Path)
			}
		}
		if r.Access != web.AccessPerm {
			continue
		}
		denied := 0
		for role, u := range users {
			if web.PermittedSomewhere(b.Access, u, r.Perm) {
				continue
			}
			// The row names the route: as its object, or when the path
			// names an object that exists (audit entry 1), in its reason.
			where := "action = 'authz.denied' AND outcome = 'denied' AND (object_id = $1 OR strpos(reason, 'route ' || $1) > 0) AND actor_subject = $2"
			before := b.AuditCount(t, where, r.Method+" "+r.Path, u.Subject)
			resp := b.Do(t, clients[role], r.Method, path, url.Values{}, nil)
			assert.Equal(t, http.StatusForbidden, resp.Status, "%s %s as %s", r.Method, r.Path, role)
			after := b.AuditCount(t, where, r.Method+" "+r.Path, u.Subject)
			assert.Equal(t, before+1, after, "%s %s as %s: denied audit row", r.Method, r.Path, role)
			denied++
		}
		assert.Positive(t, denied, "%s %s: some role lacks %s:%s", r.Method, r.Path, r.Perm.Object, r.Perm.Action)
		checked++
	}
	assert.GreaterOrEqual(t, checked, 5)
}

func TestCrossTenantIsNotFound(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	acme, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Tenant: "acme", Action: "test.thing", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	globex, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Tenant: "globex", Action: "test.thing", Outcome: audit.OutcomeOK})
	require.NoError(t, err)

	c, _ := b.SignIn(t, "acme:auditor")
	assert.Equal(t, http.StatusOK, b.Do(t, c, "GET", fmt.Sprintf("/audit/%d", acme.Seq), nil, nil).Status)
	resp := b.Do(t, c, "GET", fmt.Sprintf("/audit/%d", globex.Seq), nil, nil)
	assert.Equal(t, http.StatusNotFound, resp.Status, "another tenant's event is not found, not forbidden")
	assert.Equal(t, resp.Status, b.Do(t, c, "GET", "/audit/999999", nil, nil).Status, "same answer as a missing one")
	list := b.Do(t, c, "GET", "/audit", nil, nil).Doc(t)
	assert.Equal(t, 1, list.Find(`[data-testid="audit-row"]`).FilterFunction(func(_ int, s *goquery.Selection) bool {
		return strings.Contains(s.Text(), "test.thing")
	}).Length(), "the list shows only the tenant's own events")

	// An admin of acme cannot see or delete a globex binding.
	admin, _ := b.SignIn(t, "*:admin")
	resp = b.Do(t, admin, "POST", "/admin/bindings", url.Values{"email": {"g@example.com"}, "role": {"viewer"}, "tenant": {"globex"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	var id int64
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT id FROM role_bindings WHERE tenant = 'globex'").Scan(&id))
	acmeAdmin, _ := b.SignIn(t, "acme:admin")
	resp = b.Do(t, acmeAdmin, "POST", fmt.Sprintf("/admin/bindings/%d/delete", id), url.Values{}, nil)
	assert.Equal(t, http.StatusNotFound, resp.Status)
	var left int
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT count(*) FROM role_bindings WHERE id = $1", id).Scan(&left))
	assert.Equal(t, 1, left)
	page := b.Do(t, acmeAdmin, "GET", "/admin/bindings", nil, nil)
	assert.NotContains(t, page.Body, "g@example.com", "another tenant's bindings are not listed")
}

func TestCrossSitePostRejected(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	admin, _ := b.SignIn(t, "*:admin")
	form := url.Values{"email": {"x@example.com"}, "role": {"oncall"}, "tenant": {"acme"}}
	resp := b.Do(t, admin, "POST", "/admin/bindings", form, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
	assert.Equal(t, http.StatusForbidden, resp.Status)
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM role_bindings").Scan(&n))
	assert.Zero(t, n, "nothing changed")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'csrf.denied' AND outcome = 'denied'"))
	// The same form from the console's own page goes through.
	resp = b.Do(t, admin, "POST", "/admin/bindings", form, nil)
	assert.Equal(t, http.StatusSeeOther, resp.Status)
}

// TestEveryPostRefusesCrossSite walks the route table: every POST, from
// another site's page (by Sec-Fetch-Site, or by Origin alone for browsers
// that send no fetch metadata), is refused before its handler and audited
// under the signed-in person. This check is the console's CSRF protection:
// forms carry no token. Each route is posted by a person of its own: such
// rows are limited per person (a burst of 10, TestRevFixes6CrossSitePostsAreNotLimited).
func TestEveryPostRefusesCrossSite(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	posts := 0
	for _, r := range (&web.Server{}).Routes() {
		if r.Method != http.MethodPost {
			continue
		}
		posts++
		admin, u := b.SignIn(t, "*:admin")
		for _, hdr := range []map[string]string{
			{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
			{"Origin": "https://evil.example", "Sec-Fetch-Site": ""},
		} {
			where := "action = 'csrf.denied' AND object_id = $1 AND actor_subject = $2"
			before := b.AuditCount(t, where, "POST "+concretePath(r.Path), u.Subject)
			resp := b.Do(t, admin, r.Method, concretePath(r.Path), url.Values{"reason": {"x"}}, hdr)
			assert.Equal(t, http.StatusForbidden, resp.Status, "%s %s from %v", r.Method, r.Path, hdr)
			assert.Contains(t, resp.Body, "Cross-site request refused.")
			assert.Equal(t, before+1, b.AuditCount(t, where, "POST "+concretePath(r.Path), u.Subject), "%s %s: audited", r.Method, r.Path)
		}
	}
	assert.GreaterOrEqual(t, posts, 10)
	admin, _ := b.SignIn(t, "*:admin")
	resp := b.Do(t, admin, "GET", "/", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	assert.Zero(t, resp.Doc(t).Find(`input[name="_csrf"]`).Length(), "no token field that nothing checks")
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "*:auditor")
	for _, path := range []string{"/healthz", "/audit", "/nope", "/auth/login", "/static/app.css"} {
		resp := b.Do(t, c, "GET", path, nil, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		assert.Contains(t, csp, "script-src 'self'", path)
		assert.NotContains(t, csp, "unsafe-inline", path)
		assert.Contains(t, csp, "frame-ancestors 'none'", path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
		assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), path)
		assert.NotEmpty(t, resp.Header.Get("Referrer-Policy"), path)
	}
}

func TestNoRoleSeesNoAccess(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "engineering")
	resp := b.Do(t, c, "GET", "/", nil, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status)
	assert.Equal(t, 1, resp.Doc(t).Find(`[data-testid="no-access"]`).Length(), resp.Body)
	resp = b.Do(t, c, "POST", "/auth/logout", url.Values{}, nil)
	assert.Equal(t, http.StatusSeeOther, resp.Status, "a person without roles can still sign out")
}

func TestHeaderShowsUserAndRoles(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, u := b.SignIn(t, "acme:oncall", "globex:approver", "*:auditor")
	d := b.Do(t, c, "GET", "/audit", nil, nil).Doc(t)
	assert.Contains(t, d.Find(`[data-testid="user-name"]`).Text(), u.Email)
	roles := d.Find(`[data-testid="user-roles"]`).Text()
	for _, want := range []string{"acme", "oncall", "globex", "approver", "auditor"} {
		assert.Contains(t, roles, want)
	}
}

func TestLogoutEndsSession(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, u := b.SignIn(t, "*:auditor")
	require.Equal(t, http.StatusOK, b.Do(t, c, "GET", "/audit", nil, nil).Status)
	resp := b.Do(t, c, "POST", "/auth/logout", url.Values{}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status)
	assert.Equal(t, "/signed-out", resp.Header.Get("Location"))
	assert.Equal(t, http.StatusFound, b.Do(t, c, "GET", "/audit", nil, nil).Status, "signed out")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'auth.logout' AND actor_subject = $1", u.Subject))
}

func TestAuditObjectFilterTypeAndID(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	for _, typ := range []string{"replay_request", "dead_letter"} {
		_, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Action: "test." + typ, ObjectType: typ, ObjectID: "7", Outcome: audit.OutcomeOK})
		require.NoError(t, err)
	}
	c, _ := b.SignIn(t, "*:auditor")
	rows := func(q string) int {
		return b.Do(t, c, "GET", "/audit?"+q, nil, nil).Doc(t).Find(`[data-testid="audit-row"]`).Length()
	}
	assert.Equal(t, 2, rows("object=7"))
	assert.Equal(t, 1, rows("object=replay_request:7"))
	assert.Equal(t, 0, rows("object=role_binding:7"))
}
