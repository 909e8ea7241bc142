package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/web"
)

// TestEveryRouteIsTenantScoped walks the route table as a person who holds
// every role in acme and calls each route (GET and POST) on globex's
// objects. A route whose path names an object answers 404, as for a
// missing one; a route whose form selects dead letters leaves globex's
// out, one whose form names the tenant answers 404 too (acme's person
// holds no role in globex: the name says nothing of whether it exists),
// and one that needs its permission in every tenant (a globex person's
// sessions) answers 403; each of those writes one denied audit row. A
// route that lists shows nothing of globex. None changes anything of
// globex. A route that does not declare how it finds its tenant fails.
func TestEveryRouteIsTenantScoped(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()

	// globex's objects, each carrying a word that must never show to acme.
	const secret = "globex-secret-7f3a"
	_, globex := b.SignIn(t, "globex:oncall", "globex:admin")
	dl := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: secret, Error: secret})
	mail := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "email.send", MsgID: secret + "-mail",
		OperationID: "op-" + secret, Error: secret})
	req := testfactory.Request(t, b.Replays, globex.Actor, []int64{mail}, replay.SubmitInput{Reason: secret})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	batch, _ := testfactory.Draft(t, b.Replays, globex.Actor, dl)
	entry, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Tenant: "globex", Action: "test.secret", Reason: secret, Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	binding, err := authz.NewBindings(b.Pool).Add(ctx, authz.BindingInput{Email: secret + "@globex.example", Role: authz.RoleViewer, Tenant: "globex"},
		globex, audit.Event{})
	require.NoError(t, err)
	objects := map[string]string{
		"dead_letter": fmt.Sprint(dl), "replay_request": fmt.Sprint(req.ID), "replay_batch": batch,
		"audit_entry": fmt.Sprint(entry.Seq), "role_binding": fmt.Sprint(binding.ID),
	}

	acme, me := b.SignIn(t, "acme:oncall", "acme:approver", "acme:auditor", "acme:admin")
	// globexState is everything of globex a route could change.
	globexState := func() string {
		var s string
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT concat_ws('|',
            (SELECT string_agg(id || ':' || status || ':' || version, ',' ORDER BY id) FROM dead_letters WHERE tenant = 'globex'),
            (SELECT string_agg(id || ':' || status || ':' || version || ':' || encode(intent_hash, 'hex'), ',' ORDER BY id)
                FROM replay_requests WHERE tenant = 'globex'),
            (SELECT string_agg(i.request_id || ':' || i.dead_letter_id || ':' || encode(i.payload_sha256, 'hex'), ',' ORDER BY i.request_id, i.position)
                FROM replay_items i JOIN replay_requests r ON r.id = i.request_id WHERE r.tenant = 'globex'),
            (SELECT count(*) FROM replay_approvals a JOIN replay_requests r ON r.id = a.request_id WHERE r.tenant = 'globex'),
            (SELECT count(*) FROM replay_jobs j JOIN replay_requests r ON r.id = j.request_id WHERE r.tenant = 'globex'),
            (SELECT string_agg(id || ':' || subject || ':' || role, ',' ORDER BY id) FROM role_bindings WHERE tenant = 'globex'),
            (SELECT count(*) FROM user_sessions WHERE subject = $1 AND ended_at IS NULL),
            (SELECT count(*) FROM fix_markers WHERE tenant = 'globex'))`, globex.Subject).Scan(&s))
		return s
	}
	denied := func() int { return b.AuditCount(t, "outcome = 'denied' AND actor_subject = $1", me.Subject) }

	routes := (&web.Server{}).Routes()
	kinds := map[web.Tenancy]int{}
	for _, r := range routes {
		name := r.Method + " " + r.Path
		kinds[r.Tenancy]++
		path, form := r.Path, url.Values(nil)
		switch r.Tenancy {
		case web.TenancyUndeclared:
			t.Errorf("%s: declares no tenancy", name)
			continue
		case web.NoTenant:
			continue // probes, static files, sign-in and out, the policy table
		case web.ObjectTenant:
			require.NotNil(t, r.Locate, name)
			id, ok := objects[r.Locate.Object]
			require.True(t, ok, "%s: no globex %s to call it on", name, r.Locate.Object)
			path = strings.ReplaceAll(path, ":"+r.Locate.Param, id)
			path = strings.ReplaceAll(path, ":dl", fmt.Sprint(mail))
			if r.Method == http.MethodPost {
				form = url.Values{"reason": {"acme was here"}, "intent": {req.IntentHex()}, "confirmation": {"REPLAY " + secret},
					"payload": {"{}"}, "version": {"1"}}
			}
		case web.SelectedTenants:
			require.NotNil(t, r.Locate, name)
			form = url.Values{"id": {fmt.Sprint(dl), fmt.Sprint(mail)}, "reason": {"acme was here"}, "action": {"discard"}}
		case web.NamedTenant:
			form = url.Values{"email": {"intruder@example.com"}, "role": {authz.RoleAdmin}, "tenant": {"globex"}}
		case web.EveryTenant:
			if r.Method == http.MethodPost {
				form = url.Values{"issuer": {globex.Issuer}, "subject": {globex.Subject}}
			}
		case web.CallerTenants:
			path += "?tenant=globex"
			if r.Method == http.MethodPost {
				form = url.Values{}
			}
		}
		require.NotContains(t, path, ":", "%s: a parameter left unfilled", name)
		state, deniedBefore := globexState(), denied()
		resp := b.Do(t, acme, r.Method, path, form, nil)
		assert.Equal(t, state, globexState(), "%s: changed something of globex", name)
		assert.NotContains(t, resp.Body, secret, "%s: shows globex's", name)
		switch r.Tenancy {
		case web.ObjectTenant:
			assert.Equal(t, http.StatusNotFound, resp.Status, "%s on globex's %s", name, r.Locate.Object)
			assert.Equal(t, deniedBefore+1, denied(), "%s: one denied audit row", name)
		case web.SelectedTenants:
			assert.Contains(t, []int{http.StatusUnprocessableEntity, http.StatusSeeOther}, resp.Status, name)
			assert.Equal(t, deniedBefore+1, denied(), "%s: one denied audit row", name)
		case web.NamedTenant:
			assert.Equal(t, http.StatusNotFound, resp.Status, "%s naming globex", name)
			assert.Equal(t, deniedBefore+1, denied(), "%s: one denied audit row", name)
		case web.EveryTenant:
			assert.Equal(t, http.StatusForbidden, resp.Status, name)
			assert.Equal(t, deniedBefore+1, denied(), "%s: one denied audit row", name)
		case web.CallerTenants:
			assert.Less(t, resp.Status, http.StatusInternalServerError, name)
			assert.Equal(t, deniedBefore, denied(), "%s: a list refuses nothing", name)
		}
	}
	// The walk reached every kind, and every replay request page.
	for _, k := range []web.Tenancy{web.NoTenant, web.CallerTenants, web.NamedTenant, web.ObjectTenant, web.SelectedTenants, web.EveryTenant} {
		assert.Positive(t, kinds[k], "routes of tenancy %d", k)
	}
	var replayPages int
	for _, r := range routes {
		if r.Tenancy == web.ObjectTenant && r.Locate.Object == "replay_request" {
			replayPages++
		}
	}
	assert.Equal(t, 10, replayPages, "show, progress, approve, reject, cancel, request again, edit, payload download, reconcile, stop")
}

// TestNamedTenantRefusals: a form that names a tenant where the person may
// not act answers 403 in a tenant where they hold a role (they know it
// exists) and 404 in any other, the same for one that exists and one that
// does not, so that typing names finds no tenants. Each refusal writes one
// denied audit row and changes nothing.
func TestNamedTenantRefusals(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "initech", ItemType: "search.index_update", MsgID: "initech-1"})
	// A viewer of acme may read there, but not triage, manage or stop;
	// globex's admin and approver roles reach every route.
	c, me := b.SignIn(t, "acme:viewer", "globex:admin", "globex:approver", "globex:oncall")
	denied := func() int { return b.AuditCount(t, "outcome = 'denied' AND actor_subject = $1", me.Subject) }
	forms := map[string]func(tenant string) url.Values{
		"/groups/snooze": func(tn string) url.Values {
			return url.Values{"tenant": {tn}, "group": {strings.Repeat("a", 16)}, "for": {"1h"}}
		},
		"/groups/triage": func(tn string) url.Values {
			return url.Values{"tenant": {tn}, "group": {strings.Repeat("a", 16)}, "owner": {"me"}, "note": {"x"}, "for": {"1h"}}
		},
		"/groups/wake": func(tn string) url.Values { return url.Values{"tenant": {tn}, "group": {strings.Repeat("a", 16)}} },
		"/groups/owner": func(tn string) url.Values {
			return url.Values{"tenant": {tn}, "group": {strings.Repeat("a", 16)}, "owner": {"me"}}
		},
		"/groups/note": func(tn string) url.Values {
			return url.Values{"tenant": {tn}, "group": {strings.Repeat("a", 16)}, "note": {"x"}}
		},
		"/admin/bindings": func(tn string) url.Values {
			return url.Values{"email": {"intruder@example.com"}, "role": {authz.RoleAdmin}, "tenant": {tn}}
		},
		"/replay/stop": func(tn string) url.Values {
			return url.Values{"tenant": {tn}, "reason": {"x"}, "confirm": {"STOP " + tn}}
		},
	}
	named := 0
	for _, r := range (&web.Server{}).Routes() {
		if r.Tenancy == web.NamedTenant {
			named++
			require.Contains(t, forms, r.Path, "a form for %s %s", r.Method, r.Path)
		}
	}
	require.Equal(t, len(forms), named, "every route whose form names a tenant")
	for path, form := range forms {
		for tenant, want := range map[string]int{"acme": http.StatusForbidden, "initech": http.StatusNotFound, "no-such-tenant": http.StatusNotFound} {
			before := denied()
			resp := b.Do(t, c, http.MethodPost, path, form(tenant), nil)
			assert.Equal(t, want, resp.Status, "%s naming %s", path, tenant)
			assert.Equal(t, before+1, denied(), "%s naming %s: one denied audit row", path, tenant)
		}
	}
	var bindings int
	require.NoError(t, b.Pool.QueryRow(t.Context(), "SELECT count(*) FROM role_bindings").Scan(&bindings))
	assert.Zero(t, bindings, "no binding added")
}
