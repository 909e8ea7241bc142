package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

type bundle struct {
	db      *testdb.DB
	idp     *mockoidc.MockOIDC
	srv     *httptest.Server
	access  *authz.Access
	replays *replay.Service
	users   atomic.Int64
}

// setup serves the whole console handler on a loopback port, with sessions
// in a fresh database and a mock OIDC provider for signing in.
func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := &bundle{db: testdb.New(t)}
	var err error
	b.idp, err = mockoidc.Run()
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.idp.Shutdown() })
	sessions, stop := authz.NewSessions(b.db.Pool, authz.SessionConfig{})
	t.Cleanup(stop)
	b.access, err = authz.NewAccess(ctx, b.db.Pool, authz.GroupMap{}, log)
	require.NoError(t, err)

	var handler http.Handler
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(b.srv.Close)
	cfg := b.idp.Config()
	login, err := authz.NewLogin(ctx, authz.OIDCConfig{
		Issuer: cfg.Issuer, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RedirectURL: b.srv.URL + "/auth/callback",
	}, 5*time.Second, sessions, b.db.Pool, log)
	require.NoError(t, err)
	table, err := replaypolicy.Load("../dev/policy.toml")
	require.NoError(t, err)
	b.replays = replay.New(b.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return table }})
	login.RememberIn(authz.NewDirectory(b.db.Pool))
	handler = New(Deps{
		Pool: b.db.Pool, Gatherer: prometheus.NewRegistry(), Log: log, Sessions: sessions, Login: login,
		Access: b.access, Bindings: authz.NewBindings(b.db.Pool), DeadLetters: dlq.NewStore(b.db.Pool),
		Replays: b.replays, PolicyFile: "dev/policy.toml",
	})
	return b
}

func noFollow(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signIn goes through the real sign-in flow as a new user in groups and
// returns a client holding their session.
func (b *bundle) signIn(t *testing.T, groups ...string) (*http.Client, authz.User) {
	t.Helper()
	n := b.users.Add(1)
	mu := &mockoidc.MockUser{Subject: fmt.Sprintf("user-%d", n), Email: fmt.Sprintf("user%d@example.com", n), EmailVerified: true, Groups: groups}
	b.idp.QueueUser(mu)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := noFollow(jar)
	next := b.srv.URL + "/auth/login"
	for range 4 {
		resp, err := c.Get(next)
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-in stopped at %s with %d", next, resp.StatusCode)
		}
		next = resp.Header.Get("Location")
		if !strings.HasPrefix(next, "http") {
			break // back on the console: signed in
		}
	}
	return c, authz.User{Actor: quarantine.Actor{Issuer: b.idp.Issuer(), Subject: mu.Subject, Email: mu.Email, EmailVerified: true}, Groups: groups}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (r response) doc(t *testing.T) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(r.body))
	require.NoError(t, err)
	return d
}

func (b *bundle) do(t *testing.T, c *http.Client, method, path string, form url.Values, hdr map[string]string) response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if method == http.MethodPost {
		req.Header.Set("Origin", b.srv.URL) // what a browser sends on a same-origin form post
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

func (b *bundle) auditCount(t *testing.T, where string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_log WHERE "+where, args...).Scan(&n))
	return n
}

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
	b := setup(t)
	anon := noFollow(nil)
	roleUsers := map[string][]string{
		"viewer": {"acme:viewer"}, "oncall": {"acme:oncall"}, "approver": {"acme:approver"},
		"auditor": {"*:auditor"}, "admin": {"*:admin"},
	}
	clients := map[string]*http.Client{}
	users := map[string]authz.User{}
	for role, groups := range roleUsers {
		clients[role], users[role] = b.signIn(t, groups...)
	}
	routes := (&Server{}).Routes()
	require.NotEmpty(t, routes)
	checked := 0
	for _, r := range routes {
		path := concretePath(r.Path)
		switch r.Access {
		case AccessPublic:
			continue
		case AccessSignedIn, AccessPerm:
			resp := b.do(t, anon, r.Method, path, url.Values{}, nil)
			if r.Method == http.MethodGet {
				assert.Equal(t, http.StatusFound, resp.status, "%s %s unauthenticated", r.Method, r.Path)
				assert.True(t, strings.HasPrefix(resp.header.Get("Location"), "/auth/login?return_to="), "%s %s → %s", r.Method, r.Path, resp.header.Get("Location"))
			} else {
				assert.Equal(t, http.StatusUnauthorized, resp.status, "%s %s unauthenticated", r.Method, r.Path)
			}
		}
		if r.Access != AccessPerm {
			continue
		}
		denied := 0
		for role, u := range users {
			if b.access.CanSomewhere(u, r.Perm.Object, r.Perm.Action, nil) {
				continue
			}
			before := b.auditCount(t, "action = 'authz.denied' AND outcome = 'denied' AND object_id = $1 AND actor_subject = $2", r.Method+" "+r.Path, u.Subject)
			resp := b.do(t, clients[role], r.Method, path, url.Values{}, nil)
			assert.Equal(t, http.StatusForbidden, resp.status, "%s %s as %s", r.Method, r.Path, role)
			after := b.auditCount(t, "action = 'authz.denied' AND outcome = 'denied' AND object_id = $1 AND actor_subject = $2", r.Method+" "+r.Path, u.Subject)
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
	b := setup(t)
	ctx := context.Background()
	acme, err := audit.AppendFunc(ctx, b.db.Pool, audit.Event{Tenant: "acme", Action: "test.thing", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	globex, err := audit.AppendFunc(ctx, b.db.Pool, audit.Event{Tenant: "globex", Action: "test.thing", Outcome: audit.OutcomeOK})
	require.NoError(t, err)

	c, _ := b.signIn(t, "acme:auditor")
	assert.Equal(t, http.StatusOK, b.do(t, c, "GET", fmt.Sprintf("/audit/%d", acme.Seq), nil, nil).status)
	resp := b.do(t, c, "GET", fmt.Sprintf("/audit/%d", globex.Seq), nil, nil)
	assert.Equal(t, http.StatusNotFound, resp.status, "another tenant's event is not found, not forbidden")
	assert.Equal(t, resp.status, b.do(t, c, "GET", "/audit/999999", nil, nil).status, "same answer as a missing one")
	list := b.do(t, c, "GET", "/audit", nil, nil).doc(t)
	assert.Equal(t, 1, list.Find(`[data-testid="audit-row"]`).FilterFunction(func(_ int, s *goquery.Selection) bool {
		return strings.Contains(s.Text(), "test.thing")
	}).Length(), "the list shows only the tenant's own events")

	// An admin of acme cannot see or delete a globex binding.
	admin, _ := b.signIn(t, "*:admin")
	resp = b.do(t, admin, "POST", "/admin/bindings", url.Values{"email": {"g@example.com"}, "role": {"viewer"}, "tenant": {"globex"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.status, resp.body)
	var id int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, "SELECT id FROM role_bindings WHERE tenant = 'globex'").Scan(&id))
	acmeAdmin, _ := b.signIn(t, "acme:admin")
	resp = b.do(t, acmeAdmin, "POST", fmt.Sprintf("/admin/bindings/%d/delete", id), url.Values{}, nil)
	assert.Equal(t, http.StatusNotFound, resp.status)
	var left int
	require.NoError(t, b.db.Pool.QueryRow(ctx, "SELECT count(*) FROM role_bindings WHERE id = $1", id).Scan(&left))
	assert.Equal(t, 1, left)
	page := b.do(t, acmeAdmin, "GET", "/admin/bindings", nil, nil)
	assert.NotContains(t, page.body, "g@example.com", "another tenant's bindings are not listed")
}

func TestCrossSitePostRejected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, _ := b.signIn(t, "*:admin")
	form := url.Values{"email": {"x@example.com"}, "role": {"oncall"}, "tenant": {"acme"}}
	resp := b.do(t, admin, "POST", "/admin/bindings", form, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
	assert.Equal(t, http.StatusForbidden, resp.status)
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM role_bindings").Scan(&n))
	assert.Zero(t, n, "nothing changed")
	assert.Equal(t, 1, b.auditCount(t, "action = 'csrf.denied' AND outcome = 'denied'"))
	// The same form from the console's own page goes through.
	resp = b.do(t, admin, "POST", "/admin/bindings", form, nil)
	assert.Equal(t, http.StatusSeeOther, resp.status)
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.signIn(t, "*:auditor")
	for _, path := range []string{"/healthz", "/audit", "/nope", "/auth/login", "/static/app.css"} {
		resp := b.do(t, c, "GET", path, nil, nil)
		csp := resp.header.Get("Content-Security-Policy")
		assert.Contains(t, csp, "script-src 'self'", path)
		assert.NotContains(t, csp, "unsafe-inline", path)
		assert.Contains(t, csp, "frame-ancestors 'none'", path)
		assert.Equal(t, "nosniff", resp.header.Get("X-Content-Type-Options"), path)
		assert.Equal(t, "DENY", resp.header.Get("X-Frame-Options"), path)
		assert.NotEmpty(t, resp.header.Get("Referrer-Policy"), path)
	}
}

func TestNoRoleSeesNoAccess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.signIn(t, "engineering")
	resp := b.do(t, c, "GET", "/", nil, nil)
	assert.Equal(t, http.StatusForbidden, resp.status)
	assert.Equal(t, 1, resp.doc(t).Find(`[data-testid="no-access"]`).Length(), resp.body)
	resp = b.do(t, c, "POST", "/auth/logout", url.Values{}, nil)
	assert.Equal(t, http.StatusSeeOther, resp.status, "a person without roles can still sign out")
}

func TestHeaderShowsUserAndRoles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, u := b.signIn(t, "acme:oncall", "globex:approver", "*:auditor")
	d := b.do(t, c, "GET", "/audit", nil, nil).doc(t)
	assert.Contains(t, d.Find(`[data-testid="user-name"]`).Text(), u.Email)
	roles := d.Find(`[data-testid="user-roles"]`).Text()
	for _, want := range []string{"acme", "oncall", "globex", "approver", "auditor"} {
		assert.Contains(t, roles, want)
	}
}

func TestLogoutEndsSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, u := b.signIn(t, "*:auditor")
	require.Equal(t, http.StatusOK, b.do(t, c, "GET", "/audit", nil, nil).status)
	resp := b.do(t, c, "POST", "/auth/logout", url.Values{}, nil)
	require.Equal(t, http.StatusSeeOther, resp.status)
	assert.Equal(t, "/signed-out", resp.header.Get("Location"))
	assert.Equal(t, http.StatusFound, b.do(t, c, "GET", "/audit", nil, nil).status, "signed out")
	assert.Equal(t, 1, b.auditCount(t, "action = 'auth.logout' AND actor_subject = $1", u.Subject))
}

func TestAuditObjectFilterTypeAndID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, typ := range []string{"replay_request", "dead_letter"} {
		_, err := audit.AppendFunc(ctx, b.db.Pool, audit.Event{Action: "test." + typ, ObjectType: typ, ObjectID: "7", Outcome: audit.OutcomeOK})
		require.NoError(t, err)
	}
	c, _ := b.signIn(t, "*:auditor")
	rows := func(q string) int {
		return b.do(t, c, "GET", "/audit?"+q, nil, nil).doc(t).Find(`[data-testid="audit-row"]`).Length()
	}
	assert.Equal(t, 2, rows("object=7"))
	assert.Equal(t, 1, rows("object=replay_request:7"))
	assert.Equal(t, 0, rows("object=role_binding:7"))
}
