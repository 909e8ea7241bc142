package views_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/views"
)

// Hostile values a message, a header or a user can put into any field.
const (
	scriptTag = `<script>alert(1)</script>`
	attrBreak = `"><img src=x onerror=alert(1)>`
	jsURL     = `javascript:alert(1)`
	badUTF8   = "bad\xff\xfe\xc3bytes"
	hostile   = scriptTag + attrBreak + badUTF8
)

// sanitizedURL is what templ writes for an href that is not a safe URL.
const sanitizedURL = "about:invalid#TemplFailedSanitizationURL"

var now = time.Date(2026, 11, 29, 10, 2, 11, 0, time.UTC)

func render(t *testing.T, c templ.Component) (*goquery.Document, string) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, c.Render(context.Background(), &buf))
	html := buf.String()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	require.NoError(t, err)
	return doc, html
}

func byTestID(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}

// assertNoInjection checks that nothing executable came from data: the
// only scripts are the two deferred asset scripts, no element has an event
// handler attribute, no <img> exists, and no URL attribute is javascript:.
func assertNoInjection(t *testing.T, doc *goquery.Document, html string) {
	t.Helper()
	scripts := doc.Find("script")
	assert.Equal(t, 2, scripts.Length(), "only htmx and app.js")
	scripts.Each(func(_ int, s *goquery.Selection) {
		src, ok := s.Attr("src")
		assert.True(t, ok && strings.HasPrefix(src, "/static/"), "script without a static src: %q", src)
		assert.Empty(t, strings.TrimSpace(s.Text()), "inline script content")
	})
	assert.Zero(t, doc.Find("img").Length(), "an <img> came from data")
	doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range s.Nodes[0].Attr {
			name := strings.ToLower(a.Key)
			assert.False(t, strings.HasPrefix(name, "on"), "event handler attribute %q", a.Key)
			assert.NotEqual(t, "style", name, "style attribute")
			switch name {
			case "href", "src", "action", "formaction", "hx-get", "hx-post":
				v := strings.ToLower(strings.TrimSpace(a.Val))
				assert.False(t, strings.HasPrefix(v, "javascript:"), "%s=%q", a.Key, a.Val)
			}
		}
	})
	assert.NotContains(t, html, scriptTag)
	assert.NotContains(t, html, "<img")
}

func user() *views.User {
	return &views.User{
		Name:          "Dana Okafor",
		Email:         "dana@example.com",
		EmailVerified: true,
		Roles:         []views.TenantRole{{Tenant: "acme", Role: "oncall"}, {Tenant: "acme", Role: "approver"}, {Tenant: "globex", Role: "oncall"}},
		Nav:           views.Nav{Audit: true, Admin: true},
		LogoutURL:     "/auth/logout",
	}
}

func page(title, active string) views.Page {
	return views.Page{
		Title: title, Active: active, User: user(), RequestID: "req-123",
		Assets: views.Assets{CSS: "/static/app.css?v=1", JS: "/static/app.js?v=2", HTMX: "/static/htmx.min.js?v=3"},
	}
}

func hostileUser() *views.User {
	return &views.User{
		Name: hostile, Email: attrBreak,
		Roles:     []views.TenantRole{{Tenant: scriptTag, Role: attrBreak}},
		Nav:       views.Nav{Dashboard: true, DeadLetters: true, Groups: true, Approvals: true, Audit: true, Admin: true, Policy: true},
		LogoutURL: jsURL,
	}
}

func TestLayout(t *testing.T) {
	t.Parallel()

	t.Run("UserAndRoles", func(t *testing.T) {
		t.Parallel()
		doc, _ := render(t, views.SignedOut(page("Audit log", "audit")))
		assert.Equal(t, "Audit log · Quarantine", doc.Find("title").Text())
		assert.Equal(t, "Dana Okafor", byTestID(doc, "user-name").Text())
		assert.Equal(t, "acme: oncall, approver · globex: oncall", byTestID(doc, "user-roles").Text())
		form := byTestID(doc, "logout-form")
		assert.Equal(t, "post", form.AttrOr("method", ""))
		assert.Equal(t, "/auth/logout", form.AttrOr("action", ""))
		assert.Zero(t, byTestID(doc, "sign-in").Length())
	})

	t.Run("NavOnlyAllowed", func(t *testing.T) {
		t.Parallel()
		doc, _ := render(t, views.SignedOut(page("Audit log", "audit")))
		links := byTestID(doc, "nav").Find("a")
		assert.Equal(t, 2, links.Length())
		assert.Equal(t, "/audit", byTestID(doc, "nav-audit").AttrOr("href", ""))
		assert.Equal(t, "page", byTestID(doc, "nav-audit").AttrOr("aria-current", ""))
		assert.Equal(t, "/admin/bindings", byTestID(doc, "nav-admin").AttrOr("href", ""))
		_, current := byTestID(doc, "nav-admin").Attr("aria-current")
		assert.False(t, current)
		for _, hidden := range []string{"dashboard", "deadletters", "groups", "approvals", "policy"} {
			assert.Zero(t, byTestID(doc, "nav-"+hidden).Length(), hidden)
		}
	})

	t.Run("SignedOutHeader", func(t *testing.T) {
		t.Parallel()
		doc, _ := render(t, views.SignedOut(views.Page{Title: "Signed out"}))
		assert.Zero(t, byTestID(doc, "nav").Length())
		assert.Zero(t, byTestID(doc, "user-name").Length())
		assert.Zero(t, byTestID(doc, "logout-form").Length())
		assert.Equal(t, "/auth/login", byTestID(doc, "sign-in").AttrOr("href", ""))
		assert.Equal(t, "/auth/login", byTestID(doc, "sign-in-again").AttrOr("href", ""))
		assert.Contains(t, byTestID(doc, "signed-out").Text(), "You are signed out")
	})

	t.Run("Head", func(t *testing.T) {
		t.Parallel()
		doc, _ := render(t, views.SignedOut(page("x", "")))
		assert.Equal(t, "/static/app.css?v=1", doc.Find(`link[rel="stylesheet"]`).AttrOr("href", ""))
		var srcs []string
		doc.Find("script").Each(func(_ int, s *goquery.Selection) {
			_, deferred := s.Attr("defer")
			assert.True(t, deferred)
			srcs = append(srcs, s.AttrOr("src", ""))
		})
		assert.Equal(t, []string{"/static/htmx.min.js?v=3", "/static/app.js?v=2"}, srcs)
		var cfg map[string]any
		require.NoError(t, json.Unmarshal([]byte(doc.Find(`meta[name="htmx-config"]`).AttrOr("content", "")), &cfg))
		assert.Equal(t, false, cfg["includeIndicatorStyles"])
		assert.Equal(t, "width=device-width, initial-scale=1", doc.Find(`meta[name="viewport"]`).AttrOr("content", ""))
	})

	t.Run("DefaultAssets", func(t *testing.T) {
		t.Parallel()
		doc, _ := render(t, views.SignedOut(views.Page{}))
		assert.Equal(t, "/static/app.css", doc.Find(`link[rel="stylesheet"]`).AttrOr("href", ""))
		assert.Equal(t, "Quarantine", doc.Find("title").Text())
	})

	t.Run("Flash", func(t *testing.T) {
		t.Parallel()
		p := page("x", "")
		p.Flash = []views.Flash{{Kind: views.FlashOK, Text: "Saved."}, {Kind: views.FlashError, Text: hostile}, {Kind: "weird", Text: "fyi"}}
		doc, html := render(t, views.SignedOut(p))
		flashes := byTestID(doc, "flash")
		require.Equal(t, 3, flashes.Length())
		assert.Equal(t, "ok", flashes.Eq(0).AttrOr("data-kind", ""))
		assert.Equal(t, "status", flashes.Eq(0).AttrOr("role", ""))
		assert.Equal(t, "error", flashes.Eq(1).AttrOr("data-kind", ""))
		assert.Equal(t, "alert", flashes.Eq(1).AttrOr("role", ""))
		assert.Contains(t, flashes.Eq(1).Text(), scriptTag+attrBreak)
		assert.Equal(t, "info", flashes.Eq(2).AttrOr("data-kind", ""))
		assertNoInjection(t, doc, html)
	})

	// No form carries a token field: cross-site posts are refused by the
	// server's Origin / Sec-Fetch-Site check (web.TestCrossSitePostRejected),
	// and a field nothing checks would only look like protection.
	t.Run("CSRFToken", func(t *testing.T) {
		t.Parallel()
		doc, html := render(t, views.SignedOut(page("x", "")))
		assert.Equal(t, "post", byTestID(doc, "logout-form").AttrOr("method", ""))
		assert.Zero(t, doc.Find(`input[name="_csrf"]`).Length())
		assertNoInjection(t, doc, html)
	})

	t.Run("HostileUser", func(t *testing.T) {
		t.Parallel()
		p := page("x", "")
		p.Title = hostile
		p.User = hostileUser()
		p.RequestID = attrBreak
		doc, html := render(t, views.SignedOut(p))
		assert.Contains(t, byTestID(doc, "user-name").Text(), scriptTag+attrBreak)
		assert.Contains(t, byTestID(doc, "user-roles").Text(), scriptTag+": "+attrBreak)
		assert.Equal(t, sanitizedURL, byTestID(doc, "logout-form").AttrOr("action", ""))
		assert.Equal(t, 7, byTestID(doc, "nav").Find("a").Length())
		assertNoInjection(t, doc, html)
	})
}

func auditModel() views.AuditListModel {
	return views.AuditListModel{
		Action:   "/audit",
		Filter:   views.AuditFilter{Actor: "dana", Tenant: "acme"},
		Actions:  []views.ActionChoices{{Family: "replay", Actions: []string{"replay.approve"}}, {Family: "binding", Actions: []string{"binding.add"}}},
		Outcomes: []string{"ok", "denied", "error"},
		Tenants:  []string{"acme", "globex"},
		Rows: []views.AuditRow{
			{Seq: 42, At: now, Actor: "dana@example.com", Tenant: "acme", Action: "replay.approve", ObjectType: "replay", ObjectID: "7", MessageID: "ORDERS:1", Outcome: "ok", URL: "/audit/42"},
			{Seq: 41, At: now.Add(-time.Minute), Actor: "lee@example.com", Tenant: "acme", Action: "binding.add", Outcome: "denied", Reason: "not an admin", URL: "/audit/41"},
			{Seq: 40, At: now.Add(-2 * time.Minute), Actor: "system", Tenant: "globex", Action: "replay.publish", Outcome: "error", URL: "/audit/40"},
		},
		NextURL:        "/audit?tenant=acme&before=40",
		PrevURL:        "/audit?tenant=acme&after=42",
		ExportCSVURL:   "/audit/export.csv?tenant=acme",
		ExportJSONLURL: "/audit/export.jsonl?tenant=acme",
	}
}

func TestAuditList(t *testing.T) {
	t.Parallel()

	t.Run("Rows", func(t *testing.T) {
		t.Parallel()
		doc, html := render(t, views.AuditList(page("Audit log", "audit"), auditModel()))
		table := byTestID(doc, "audit-table")
		require.Equal(t, 1, table.Length())
		_, keynav := table.Attr("data-keynav")
		assert.True(t, keynav)
		rows := byTestID(doc, "audit-row")
		require.Equal(t, 3, rows.Length())
		assert.Equal(t, "42", rows.Eq(0).AttrOr("data-seq", ""))
		assert.Equal(t, "/audit/42", rows.Eq(0).Find(`[data-testid="audit-row-link"]`).AttrOr("href", ""))
		assert.Contains(t, rows.Eq(0).Text(), "2026-11-29 10:02:11 UTC")
		assert.Equal(t, "2026-11-29T10:02:11Z", rows.Eq(0).Find("time").AttrOr("datetime", ""))
		assert.Contains(t, rows.Eq(0).Text(), "ORDERS:1")
		for i, want := range []string{"badge--ok", "badge--warn", "badge--danger"} {
			assert.True(t, rows.Eq(i).Find(`[data-testid="badge"]`).HasClass(want), want)
		}
		assert.Zero(t, byTestID(doc, "empty-state").Length())
		assert.Equal(t, "3 events on this page", strings.Join(strings.Fields(byTestID(doc, "audit-count").Text()), " "))
		assertNoInjection(t, doc, html)
	})

	t.Run("Pager", func(t *testing.T) {
		t.Parallel()
		doc, _ := render(t, views.AuditList(page("Audit log", "audit"), auditModel()))
		assert.Equal(t, "/audit?tenant=acme&after=42", byTestID(doc, "pager-prev").AttrOr("href", ""))
		assert.Equal(t, "/audit?tenant=acme&before=40", byTestID(doc, "pager-next").AttrOr("href", ""))
		assert.Contains(t, byTestID(doc, "pager-prev").Text(), "Newer")
		assert.Contains(t, byTestID(doc, "pager-next").Text(), "Older")

		m := auditModel()
		m.PrevURL = ""
		doc, _ = render(t, views.AuditList(page("Audit log", "audit"), m))
		assert.Zero(t, byTestID(doc, "pager-prev").Length())
		assert.Equal(t, 1, byTestID(doc, "pager-next").Length())

		m.NextURL = ""
		doc, _ = render(t, views.AuditList(page("Audit log", "audit"), m))
		assert.Zero(t, byTestID(doc, "pager").Length())
	})

	t.Run("FilterForm", func(t *testing.T) {
		t.Parallel()
		doc, _ := render(t, views.AuditList(page("Audit log", "audit"), auditModel()))
		form := byTestID(doc, "audit-filter")
		assert.Equal(t, "get", form.AttrOr("method", ""))
		assert.Equal(t, "/audit", form.AttrOr("action", ""))
		assert.Equal(t, "/audit", form.AttrOr("hx-get", ""))
		assert.Equal(t, "#results", form.AttrOr("hx-target", ""))
		assert.Equal(t, "#results", form.AttrOr("hx-select", ""))
		assert.Equal(t, "true", form.AttrOr("hx-push-url", ""))
		assert.Equal(t, 1, doc.Find("#results").Length())
		assert.Equal(t, "dana", form.Find(`input[name="actor"]`).AttrOr("value", ""))
		_, hotkey := form.Find(`input[name="actor"]`).Attr("data-hotkey-focus")
		assert.True(t, hotkey)
		assert.Equal(t, "acme", form.Find(`select[name="tenant"] option[selected]`).AttrOr("value", ""))
		assert.Equal(t, "", form.Find(`select[name="action"] option[selected]`).AttrOr("value", "x"))
		for _, name := range []string{"actor", "action", "tenant", "object", "message_id", "outcome", "from", "to"} {
			assert.Equal(t, 1, form.Find(`[name="`+name+`"]`).Length(), name)
		}
		assert.Equal(t, "/audit/export.csv?tenant=acme", byTestID(doc, "export-csv").AttrOr("href", ""))
		assert.Equal(t, "/audit/export.jsonl?tenant=acme", byTestID(doc, "export-jsonl").AttrOr("href", ""))
	})

	t.Run("FieldErrors", func(t *testing.T) {
		t.Parallel()
		m := auditModel()
		m.Rows = nil
		m.Filter.From = attrBreak
		m.Errors = map[string]string{"from": "Write a time like 2026-11-29T14:00 (UTC).", "outcome": hostile}
		doc, html := render(t, views.AuditList(page("Audit log", "audit"), m))
		assert.Equal(t, "Write a time like 2026-11-29T14:00 (UTC).", strings.TrimSpace(byTestID(doc, "field-error-from").Text()))
		assert.Contains(t, byTestID(doc, "field-error-outcome").Text(), scriptTag+attrBreak)
		assert.Zero(t, byTestID(doc, "field-error-to").Length())
		from := doc.Find(`input[name="from"]`)
		assert.Equal(t, attrBreak, from.AttrOr("value", ""))
		assert.Equal(t, "true", from.AttrOr("aria-invalid", ""))
		assert.Equal(t, "f-from-error", from.AttrOr("aria-describedby", ""))
		summary := byTestID(doc, "filter-errors")
		assert.Contains(t, summary.Text(), "From:")
		assert.Contains(t, summary.Text(), "Outcome:")
		assert.Zero(t, byTestID(doc, "empty-state").Length(), "errors, not an empty result")
		// A value that is not among the options is kept, not silently dropped.
		m.Filter.Outcome = "maybe"
		doc, _ = render(t, views.AuditList(page("Audit log", "audit"), m))
		assert.Equal(t, "maybe", doc.Find(`select[name="outcome"] option[selected]`).AttrOr("value", ""))
		assertNoInjection(t, doc, html)
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		m := auditModel()
		m.Rows, m.NextURL, m.PrevURL = nil, "", ""
		doc, _ := render(t, views.AuditList(page("Audit log", "audit"), m))
		assert.Equal(t, 1, byTestID(doc, "empty-state").Length())
		assert.Contains(t, byTestID(doc, "empty-state").Text(), "No events by exactly “dana” match the other filters")
		assert.Zero(t, byTestID(doc, "audit-table").Length())
		assert.Zero(t, byTestID(doc, "pager").Length())
	})

	t.Run("Hostile", func(t *testing.T) {
		t.Parallel()
		m := auditModel()
		m.Action = jsURL
		m.Filter = views.AuditFilter{Actor: attrBreak, Action: hostile, Tenant: scriptTag, Object: hostile, MessageID: hostile, Outcome: hostile, From: hostile, To: hostile}
		m.Actions = []views.ActionChoices{{Family: hostile, Actions: []string{hostile, hostile}}}
		m.Tenants = []string{attrBreak}
		m.Rows = []views.AuditRow{{
			Seq: 1, At: now, Actor: hostile, Tenant: hostile, Action: hostile, ObjectType: hostile, ObjectID: hostile,
			MessageID: hostile, Outcome: hostile, Reason: hostile, URL: jsURL,
		}}
		m.NextURL, m.PrevURL, m.ExportCSVURL, m.ExportJSONLURL = jsURL, " JavaScript:alert(1)", jsURL, jsURL
		doc, html := render(t, views.AuditList(page("Audit log", "audit"), m))
		row := byTestID(doc, "audit-row")
		require.Equal(t, 1, row.Length())
		assert.Contains(t, row.Text(), scriptTag+attrBreak)
		assert.Equal(t, sanitizedURL, row.Find("a").AttrOr("href", ""))
		assert.Equal(t, sanitizedURL, byTestID(doc, "pager-next").AttrOr("href", ""))
		assert.Equal(t, sanitizedURL, byTestID(doc, "pager-prev").AttrOr("href", ""))
		assert.Equal(t, sanitizedURL, byTestID(doc, "export-csv").AttrOr("href", ""))
		assert.Equal(t, sanitizedURL, byTestID(doc, "audit-filter").AttrOr("action", ""))
		assert.Equal(t, sanitizedURL, byTestID(doc, "audit-filter").AttrOr("hx-get", ""))
		assert.Equal(t, attrBreak, doc.Find(`input[name="actor"]`).AttrOr("value", ""))
		assertNoInjection(t, doc, html)
	})
}

func TestAuditEvent(t *testing.T) {
	t.Parallel()
	m := views.AuditEventModel{
		Seq: 18338, At: now, ActorIssuer: "https://dex.example.com", ActorSubject: "sub-1", ActorEmail: "dana@example.com",
		Tenant: "acme", Action: "replay.approve", ObjectType: "replay", ObjectID: "4471", MessageID: "ORDERS:9",
		OperationID: "op-1", RequestID: "req-9", Reason: "fix", Outcome: "denied", RemoteAddr: "10.0.0.1", UserAgent: "curl",
		Before: `{"a": 1}`, After: "{\n  \"note\": \"" + scriptTag + "\"\n}", PrevHash: "aa11", Hash: "bb22", ObjectURL: "/approvals/4471",
	}

	t.Run("Fields", func(t *testing.T) {
		t.Parallel()
		doc, html := render(t, views.AuditEvent(page("Audit event", "audit"), m))
		ev := byTestID(doc, "audit-event")
		assert.Contains(t, ev.Text(), "replay.approve")
		assert.Contains(t, ev.Text(), "ORDERS:9")
		assert.True(t, ev.Find(`[data-testid="badge"]`).HasClass("badge--warn"))
		assert.Equal(t, "/approvals/4471", byTestID(doc, "audit-event-object").AttrOr("href", ""))
		assert.Equal(t, `{"a": 1}`, byTestID(doc, "audit-before").Text())
		assert.Equal(t, "pre", goquery.NodeName(byTestID(doc, "audit-after")))
		assert.Contains(t, byTestID(doc, "audit-after").Text(), scriptTag)
		chain := byTestID(doc, "audit-event-chain")
		assert.Contains(t, chain.Text(), "aa11")
		assert.Equal(t, 1, chain.Find(`button[data-copy="bb22"]`).Length())
		assert.Contains(t, byTestID(doc, "audit-event-actor").Text(), "dana@example.com")
		assertNoInjection(t, doc, html)
	})

	t.Run("Hostile", func(t *testing.T) {
		t.Parallel()
		h := views.AuditEventModel{
			Seq: 1, ActorIssuer: hostile, ActorSubject: hostile, ActorEmail: hostile, Tenant: hostile, Action: hostile,
			ObjectType: hostile, ObjectID: hostile, MessageID: hostile, OperationID: hostile, RequestID: hostile,
			Reason: hostile, Outcome: hostile, RemoteAddr: hostile, UserAgent: hostile, Before: hostile, After: hostile,
			PrevHash: attrBreak, Hash: hostile, ObjectURL: jsURL, ListURL: jsURL,
		}
		doc, html := render(t, views.AuditEvent(page("Audit event", "audit"), h))
		assert.Equal(t, sanitizedURL, byTestID(doc, "audit-event-object").AttrOr("href", ""))
		assert.Equal(t, sanitizedURL, doc.Find(".crumbs a").AttrOr("href", ""))
		assert.Contains(t, byTestID(doc, "audit-before").Text(), scriptTag+attrBreak)
		assert.Contains(t, byTestID(doc, "audit-event-reason").Text(), scriptTag+attrBreak)
		assert.Equal(t, 1, byTestID(doc, "audit-event-chain").Find(`button[data-copy]`).FilterFunction(func(_ int, s *goquery.Selection) bool {
			return s.AttrOr("data-copy", "") == attrBreak
		}).Length())
		assertNoInjection(t, doc, html)
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		doc, _ := render(t, views.AuditEvent(page("Audit event", "audit"), views.AuditEventModel{Seq: 3}))
		assert.Zero(t, byTestID(doc, "audit-before").Length())
		assert.Contains(t, doc.Find("main").Text(), "This event recorded no state.")
		assert.Equal(t, "/audit", doc.Find(".crumbs a").AttrOr("href", ""))
	})
}

func bindingsModel() views.BindingsModel {
	return views.BindingsModel{
		Bindings: []views.Binding{
			{ID: 1, Email: "dana@example.com", Role: "admin", Tenant: "*", CreatedBy: "bootstrap", CreatedAt: now, DeleteURL: "/admin/bindings/1/delete"},
			{ID: 2, Subject: "sub-2", Role: "oncall", Tenant: "acme", CreatedBy: "dana@example.com", CreatedAt: now},
		},
		GroupRules: []views.GroupRule{{Group: "sre", Role: "approver", Tenant: "*"}},
		Roles:      []string{"viewer", "oncall", "admin"},
		Tenants:    []string{"*", "acme"},
		AddURL:     "/admin/bindings",
	}
}

func TestAdminBindings(t *testing.T) {
	t.Parallel()

	t.Run("Tables", func(t *testing.T) {
		t.Parallel()
		p := page("Role bindings", "admin")
		doc, html := render(t, views.AdminBindings(p, bindingsModel()))
		require.Equal(t, 1, byTestID(doc, "bindings-table").Length())
		rows := byTestID(doc, "binding-row")
		require.Equal(t, 2, rows.Length())
		assert.Equal(t, "dana@example.com", rows.Eq(0).Find(`[data-testid="binding-email"]`).Text())
		assert.Equal(t, "sub-2", rows.Eq(1).Find(`[data-testid="binding-subject"]`).Text())
		del := rows.Eq(0).Find(`[data-testid="binding-delete"]`)
		assert.Equal(t, "post", del.AttrOr("method", ""))
		assert.Equal(t, "/admin/bindings/1/delete", del.AttrOr("action", ""))
		assert.Equal(t, "Remove role admin on all tenants from dana@example.com?", del.AttrOr("data-confirm", ""))
		assert.Zero(t, rows.Eq(1).Find(`[data-testid="binding-delete"]`).Length(), "no DeleteURL, no button")
		rules := byTestID(doc, "group-rule-row")
		require.Equal(t, 1, rules.Length())
		assert.Contains(t, rules.Text(), "sre")
		assert.Zero(t, byTestID(doc, "group-rules-table").Find("form, button").Length(), "read-only")
		assertNoInjection(t, doc, html)
	})

	t.Run("Form", func(t *testing.T) {
		t.Parallel()
		m := bindingsModel()
		m.Form = views.BindingForm{Email: "x", Role: "oncall", Tenant: "acme", Errors: map[string]string{
			"email": "Write an email address.", "tenant": "Choose a tenant.", "": "Give an email or a subject, not both.",
		}}
		doc, _ := render(t, views.AdminBindings(page("Role bindings", "admin"), m))
		form := byTestID(doc, "binding-form")
		assert.Equal(t, "post", form.AttrOr("method", ""))
		assert.Equal(t, "/admin/bindings", form.AttrOr("action", ""))
		assert.Equal(t, "x", form.Find(`input[name="email"]`).AttrOr("value", ""))
		assert.Equal(t, "oncall", form.Find(`select[name="role"] option[selected]`).AttrOr("value", ""))
		assert.Equal(t, "acme", form.Find(`select[name="tenant"] option[selected]`).AttrOr("value", ""))
		assert.Equal(t, "* (all tenants)", strings.TrimSpace(form.Find(`select[name="tenant"] option[value="*"]`).Text()))
		assert.Equal(t, "Write an email address.", strings.TrimSpace(byTestID(doc, "field-error-email").Text()))
		assert.Equal(t, "Choose a tenant.", strings.TrimSpace(byTestID(doc, "field-error-tenant").Text()))
		assert.Zero(t, byTestID(doc, "field-error-role").Length())
		assert.Equal(t, "Give an email or a subject, not both.", byTestID(doc, "form-error").Text())
	})

	t.Run("NoAllTenants", func(t *testing.T) {
		t.Parallel()
		m := bindingsModel()
		m.Tenants = []string{"acme"}
		doc, _ := render(t, views.AdminBindings(page("Role bindings", "admin"), m))
		assert.Zero(t, doc.Find(`select[name="tenant"] option[value="*"]`).Length())
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		doc, _ := render(t, views.AdminBindings(page("Role bindings", "admin"), views.BindingsModel{AddURL: "/admin/bindings"}))
		assert.Zero(t, byTestID(doc, "bindings-table").Length())
		assert.Equal(t, 3, byTestID(doc, "empty-state").Length(), "bindings, holders, group rules")
	})

	t.Run("Hostile", func(t *testing.T) {
		t.Parallel()
		m := views.BindingsModel{
			Bindings:   []views.Binding{{ID: 1, Email: hostile, Subject: hostile, Role: hostile, Tenant: hostile, CreatedBy: hostile, DeleteURL: jsURL}},
			GroupRules: []views.GroupRule{{Group: hostile, Role: hostile, Tenant: hostile}},
			Form:       views.BindingForm{Email: attrBreak, Subject: hostile, Role: attrBreak, Tenant: hostile, Errors: map[string]string{"email": hostile, "": hostile}},
			Roles:      []string{hostile}, Tenants: []string{attrBreak}, AddURL: jsURL,
		}
		doc, html := render(t, views.AdminBindings(page("Role bindings", "admin"), m))
		assert.Equal(t, sanitizedURL, byTestID(doc, "binding-delete").AttrOr("action", ""))
		assert.Equal(t, sanitizedURL, byTestID(doc, "binding-form").AttrOr("action", ""))
		assert.Contains(t, byTestID(doc, "binding-email").Text(), scriptTag+attrBreak)
		assert.Contains(t, byTestID(doc, "form-error").Text(), scriptTag+attrBreak)
		assert.Equal(t, attrBreak, doc.Find(`input[name="email"]`).AttrOr("value", ""))
		assertNoInjection(t, doc, html)
	})
}

func TestStatePages(t *testing.T) {
	t.Parallel()

	t.Run("NoAccess", func(t *testing.T) {
		t.Parallel()
		p := views.Page{Title: "No access", User: &views.User{Name: "Kim Park", Email: "kim@example.com", EmailVerified: true}}
		doc, _ := render(t, views.NoAccess(p))
		na := byTestID(doc, "no-access")
		require.Equal(t, 1, na.Length())
		text := strings.Join(strings.Fields(na.Text()), " ")
		assert.Contains(t, text, "You are signed in as Kim Park (kim@example.com), but you have no role in any tenant")
		assert.Contains(t, text, "administrator")
		assert.Equal(t, "kim@example.com", byTestID(doc, "no-access-email").Text())
		assert.Equal(t, "no roles", byTestID(doc, "user-roles").Text())
		assert.Zero(t, byTestID(doc, "nav").Find("a").Length())
	})

	t.Run("NoAccessUnverifiedEmail", func(t *testing.T) {
		t.Parallel()
		p := views.Page{Title: "No access", User: &views.User{Name: "Kim Park", Email: "kim@example.com", Identity: "https://idp.example|kim-1"}}
		doc, _ := render(t, views.NoAccess(p))
		text := strings.Join(strings.Fields(byTestID(doc, "no-access").Text()), " ")
		assert.Contains(t, text, "(kim@example.com (unverified))")
		assert.Contains(t, text, "did not verify your email address")
		assert.Zero(t, byTestID(doc, "no-access-email").Length(), "an unverified address cannot be bound")
		assert.Equal(t, "https://idp.example|kim-1", byTestID(doc, "no-access-identity").Text())
	})

	t.Run("NoAccessHostile", func(t *testing.T) {
		t.Parallel()
		doc, html := render(t, views.NoAccess(views.Page{User: hostileUser()}))
		assert.Contains(t, byTestID(doc, "no-access-user").Text(), scriptTag+attrBreak)
		assertNoInjection(t, doc, html)
	})

	t.Run("LoginFailed", func(t *testing.T) {
		t.Parallel()
		doc, html := render(t, views.LoginFailed(views.Page{Title: "Sign-in failed"}, hostile))
		assert.Equal(t, 1, byTestID(doc, "login-failed").Length())
		assert.Contains(t, byTestID(doc, "login-failed-reason").Text(), scriptTag+attrBreak)
		assert.Equal(t, "/auth/login", byTestID(doc, "try-again").AttrOr("href", ""))
		assertNoInjection(t, doc, html)
	})

	t.Run("ErrorPage", func(t *testing.T) {
		t.Parallel()
		for _, status := range []int{403, 404, 409, 422, 500} {
			doc, _ := render(t, views.ErrorPage(page("Error", ""), status, "", ""))
			ep := byTestID(doc, "error-page")
			require.Equal(t, 1, ep.Length(), status)
			assert.Equal(t, "req-123", byTestID(doc, "request-id").Text(), status)
			assert.NotEmpty(t, strings.TrimSpace(byTestID(doc, "error-title").Text()), status)
			assert.Contains(t, ep.Find(`[data-testid="badge"]`).Text(), strings.TrimSpace(ep.AttrOr("data-status", "")))
		}
		doc, _ := render(t, views.ErrorPage(page("Conflict", ""), 409, "Conflict", "Someone changed this."))
		assert.Equal(t, "Conflict", byTestID(doc, "error-title").Text())
		assert.Equal(t, "Someone changed this.", byTestID(doc, "error-detail").Text())
	})

	t.Run("ErrorPageHostile", func(t *testing.T) {
		t.Parallel()
		p := page("x", "")
		p.RequestID = hostile
		doc, html := render(t, views.ErrorPage(p, 404, hostile, hostile))
		assert.Contains(t, byTestID(doc, "request-id").Text(), scriptTag+attrBreak)
		assert.Contains(t, byTestID(doc, "error-detail").Text(), scriptTag+attrBreak)
		assertNoInjection(t, doc, html)
	})
}

func TestComponents(t *testing.T) {
	t.Parallel()

	t.Run("Badge", func(t *testing.T) {
		t.Parallel()
		doc, _ := render(t, views.Badge("nonsense", "x"))
		assert.True(t, doc.Find(".badge").HasClass("badge--neutral"))
		doc, _ = render(t, views.Badge(views.BadgeDanger, "boom"))
		assert.True(t, doc.Find(".badge").HasClass("badge--danger"))
		assert.Equal(t, "boom", doc.Find(".badge").Text())
	})

	t.Run("Timestamp", func(t *testing.T) {
		t.Parallel()
		berlin := time.FixedZone("CET", 3600)
		doc, _ := render(t, views.Timestamp(now.In(berlin)))
		assert.Equal(t, "2026-11-29 10:02:11 UTC", doc.Find("time").Text())
		assert.Equal(t, "2026-11-29T10:02:11Z", doc.Find("time").AttrOr("datetime", ""))
		doc, _ = render(t, views.Timestamp(time.Time{}))
		assert.Zero(t, doc.Find("time").Length())
	})

	t.Run("CopyButton", func(t *testing.T) {
		t.Parallel()
		doc, _ := render(t, views.CopyButton(attrBreak))
		b := doc.Find("button")
		assert.Equal(t, attrBreak, b.AttrOr("data-copy", ""))
		assert.Equal(t, "button", b.AttrOr("type", ""))
		_, hidden := b.Attr("hidden")
		assert.True(t, hidden, "hidden until app.js runs")
	})

	t.Run("Field", func(t *testing.T) {
		t.Parallel()
		doc, _ := render(t, views.Field(views.Input{Name: "email", Label: "Email", Type: "email", Value: "a@b", Hint: "h", Required: true}))
		in := doc.Find("input")
		assert.Equal(t, "f-email", in.AttrOr("id", ""))
		assert.Equal(t, "f-email", doc.Find("label").AttrOr("for", ""))
		assert.Equal(t, "email", in.AttrOr("type", ""))
		assert.Equal(t, "f-email-hint", in.AttrOr("aria-describedby", ""))
		_, req := in.Attr("required")
		assert.True(t, req)
		_, inv := in.Attr("aria-invalid")
		assert.False(t, inv)
	})

	t.Run("FieldSuggestionWithHiddenCharactersIsLabelledAsItReads", func(t *testing.T) {
		t.Parallel()
		suggested := []string{"orders.created", "refund.\u202edetaerc", "orders.\u200bcreated", attrBreak}
		doc, _ := render(t, views.Field(views.Input{Name: "type", Label: "Item type", Suggestions: suggested}))
		assert.Zero(t, doc.Find("img").Length(), "a suggestion broke out of its attribute")
		opts := doc.Find("datalist#" + doc.Find("input").AttrOr("list", "") + " option")
		require.Equal(t, len(suggested), opts.Length())
		opts.Each(func(i int, o *goquery.Selection) {
			v := suggested[i]
			assert.Equal(t, v, o.AttrOr("value", ""), "the value is the suggestion itself: choosing it filters on it")
			label, labelled := o.Attr("label")
			if views.HasHidden(v) {
				assert.Equal(t, views.Shown(v), label, "%q is labelled as it reads", v)
			} else {
				assert.False(t, labelled, "%q reads as it is: no label to list it twice", v)
			}
		})
	})
}

func TestAge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "just now"},
		{9 * time.Second, "just now"},
		{42 * time.Second, "42s ago"},
		{3 * time.Minute, "3m ago"},
		{59 * time.Minute, "59m ago"},
		{5 * time.Hour, "5h ago"},
		{47 * time.Hour, "47h ago"},
		{12 * 24 * time.Hour, "12d ago"},
		{120 * 24 * time.Hour, "4mo ago"},
		{800 * 24 * time.Hour, "2y ago"},
		{-3 * time.Minute, "in 3m"},
	} {
		assert.Equal(t, tc.want, views.Age(now.Add(-tc.d), now), tc.d)
	}
	assert.Equal(t, "", views.Age(time.Time{}, now))
}

func TestRolesSummary(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "acme: oncall, approver · globex: oncall · all tenants: auditor", views.RolesSummary([]views.TenantRole{
		{Tenant: "acme", Role: "oncall"}, {Tenant: "globex", Role: "oncall"}, {Tenant: "acme", Role: "approver"}, {Tenant: "*", Role: "auditor"},
	}))
	assert.Equal(t, "", views.RolesSummary(nil))
}

// TestNoRawHTML keeps views free of unescaped output: message data must go
// through templ's escaping.
func TestNoRawHTML(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*")
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || !(strings.HasSuffix(f, ".go") || strings.HasSuffix(f, ".templ")) {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, banned := range []string{"templ.Raw(", "template.HTML(", "templ.SafeURL(", "style=", "onclick", "<script>"} {
			assert.NotContains(t, string(src), banned, f)
		}
	}
}

// TestReplayProgressSaysWhatTheBrokerDidNotStore: pending items the broker
// did not store at their last try are counted apart from the rest to go,
// with the broker's answer as text (it is the broker's, not ours to
// trust); none, no note.
func TestReplayProgressSaysWhatTheBrokerDidNotStore(t *testing.T) {
	why := "not published (the broker did not store it: maximum messages exceeded " + scriptTag + "): nothing was stored; it is tried again later"
	d, html := render(t, views.ReplayProgress(views.ReplayProgressModel{Status: "running", Total: 5, Replayed: 3, Pending: 2, NotStored: 2, NotStoredWhy: why}))
	assert.Equal(t, "2", strings.TrimSpace(d.Find(`[data-testid="progress-not-stored"]`).Text()))
	note := d.Find(`[data-testid="progress-not-stored-why"]`).Text()
	assert.Contains(t, note, "The broker did not store 2 items at the last try")
	assert.Contains(t, note, "maximum messages exceeded "+scriptTag)
	assert.NotContains(t, html, scriptTag, "the answer is text")

	d, _ = render(t, views.ReplayProgress(views.ReplayProgressModel{Status: "running", Total: 5, Replayed: 3, Pending: 2}))
	assert.Zero(t, d.Find(`[data-testid="progress-not-stored-why"]`).Length())
	assert.Zero(t, d.Find(`[data-testid="progress-not-stored"]`).Length())
}
