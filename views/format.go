package views

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
)

// TimeLayout is how the console writes instants: always UTC, to the second.
const TimeLayout = "2006-01-02 15:04:05 UTC"

// FormatTime returns t in TimeLayout, or "" for the zero time.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeLayout)
}

// Age returns how long before now t was, in the largest whole unit:
// "just now" under ten seconds, then "42s ago", "3m ago", "5h ago",
// "12d ago", "4mo ago", "2y ago". A t after now gives "in 3m" and so on.
// The zero time gives "".
func Age(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	if d < 10*time.Second {
		return "just now"
	}
	var s string
	switch {
	case d < time.Minute:
		s = strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		s = strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		s = strconv.Itoa(int(d/time.Hour)) + "h"
	case d < 60*24*time.Hour:
		s = strconv.Itoa(int(d/(24*time.Hour))) + "d"
	case d < 730*24*time.Hour:
		s = strconv.Itoa(int(d/(30*24*time.Hour))) + "mo"
	default:
		s = strconv.Itoa(int(d/(365*24*time.Hour))) + "y"
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// RolesSummary writes roles grouped by tenant, in first-seen order, as
// "acme: oncall, approver · globex: oncall". Tenant "*" reads "all tenants".
func RolesSummary(roles []TenantRole) string {
	var order []string
	byTenant := map[string][]string{}
	for _, r := range roles {
		if _, seen := byTenant[r.Tenant]; !seen {
			order = append(order, r.Tenant)
		}
		byTenant[r.Tenant] = append(byTenant[r.Tenant], r.Role)
	}
	parts := make([]string, 0, len(order))
	for _, t := range order {
		parts = append(parts, TenantLabel(t)+": "+strings.Join(byTenant[t], ", "))
	}
	return strings.Join(parts, " · ")
}

// TenantLabel returns the tenant name, or "all tenants" for "*".
func TenantLabel(tenant string) string {
	if tenant == "*" {
		return "all tenants"
	}
	return tenant
}

// Badge kinds, each one colour of the design system.
const (
	BadgeNeutral = "neutral"
	BadgeOK      = "ok"
	BadgeWarn    = "warn"
	BadgeDanger  = "danger"
	BadgeInfo    = "info"
	BadgeAccent  = "accent"
)

// OutcomeKind maps an audit outcome to a badge kind: "ok" is green,
// "denied" amber, "error" red; anything else is neutral.
func OutcomeKind(outcome string) string {
	switch strings.ToLower(outcome) {
	case "ok", "success", "succeeded":
		return BadgeOK
	case "denied", "refused", "rejected":
		return BadgeWarn
	case "error", "failed", "failure":
		return BadgeDanger
	}
	return BadgeNeutral
}

func badgeClass(kind string) string {
	switch kind {
	case BadgeOK, BadgeWarn, BadgeDanger, BadgeInfo, BadgeAccent:
		return "badge badge--" + kind
	}
	return "badge badge--neutral"
}

// safeURL returns u sanitised as templ does for href attributes, as a
// string for attributes templ does not sanitise itself (hx-get): a
// javascript: or other non-web scheme becomes about:invalid.
func safeURL(u string) string {
	return string(templ.URL(u))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func cssPath(a Assets) string  { return orDefault(a.CSS, "/static/app.css") }
func jsPath(a Assets) string   { return orDefault(a.JS, "/static/app.js") }
func htmxPath(a Assets) string { return orDefault(a.HTMX, "/static/htmx.min.js") }

// htmxConfig is read by htmx 2 from <meta name="htmx-config">. Indicator
// styles are off because the CSP forbids the inline <style> htmx would add
// (app.css has them); eval and script tags in swapped content are off; the
// history cache is off so that payloads are never copied to sessionStorage;
// 422 responses (a form re-rendered with messages) are swapped like 200.
const htmxConfig = `{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,` +
	`"historyCacheSize":0,"refreshOnHistoryMiss":true,"responseHandling":[{"code":"204","swap":false},` +
	`{"code":"[23]..","swap":true},{"code":"422","swap":true},{"code":"[45]..","swap":false,"error":true},` +
	`{"code":"...","swap":false}]}`

func pageTitle(p Page) string {
	if p.Title == "" {
		return "Quarantine"
	}
	return p.Title + " · Quarantine"
}

func seqText(n int64) string { return strconv.FormatInt(n, 10) }

func objectText(typ, id string) string {
	switch {
	case typ == "" && id == "":
		return ""
	case typ == "":
		return id
	case id == "":
		return typ
	}
	return typ + " " + id
}

func statusText(status int) string {
	switch status {
	case 400:
		return "Bad request"
	case 401:
		return "Sign-in required"
	case 403:
		return "Not allowed"
	case 404:
		return "Not found"
	case 409:
		return "Conflict"
	case 422:
		return "Check your input"
	case 429:
		return "Too many requests"
	case 500:
		return "Something went wrong"
	case 502, 503, 504:
		return "Service unavailable"
	}
	return fmt.Sprintf("Error %d", status)
}

func statusHint(status int) string {
	switch status {
	case 403:
		return "Your roles do not allow this action on this tenant. An administrator can grant you a role."
	case 404:
		return "The page or object does not exist, or it belongs to a tenant you cannot see."
	case 409:
		return "Someone changed this while you were looking at it. Reload the page and try again."
	case 422:
		return "The request could not be processed as sent. Go back, correct it and try again."
	case 500, 502, 503, 504:
		return "The console could not complete the request. Try again; if it keeps failing, give the request id below to whoever runs the console."
	}
	return ""
}

func statusKind(status int) string {
	switch {
	case status >= 500:
		return BadgeDanger
	case status == 403 || status == 409 || status == 422:
		return BadgeWarn
	}
	return BadgeNeutral
}

func confirmDelete(b Binding) string {
	who := b.Email
	if who == "" {
		who = b.Subject
	}
	return "Remove role " + b.Role + " on " + TenantLabel(b.Tenant) + " from " + who + "?"
}

func fieldID(name string) string { return "f-" + name }
func errID(name string) string   { return "f-" + name + "-error" }

func auditAction(m AuditListModel) string { return orDefault(m.Action, PathAudit) }

// auditFields are the filter parameters in form order, with their labels.
var auditFields = []struct{ Name, Label string }{
	{"actor", "Actor"}, {"action", "Action"}, {"tenant", "Tenant"}, {"outcome", "Outcome"},
	{"object", "Object"}, {"message_id", "Message id"}, {"from", "From"}, {"to", "To"},
	{"page", "Page"},
}

type labelledError struct{ Label, Message string }

// sortedErrors lists errs in form order; keys that are not filter fields
// come last, sorted, labelled with themselves ("" reads "Filter").
func sortedErrors(errs map[string]string) []labelledError {
	var out []labelledError
	known := map[string]bool{}
	for _, f := range auditFields {
		known[f.Name] = true
		if msg, ok := errs[f.Name]; ok && msg != "" {
			out = append(out, labelledError{f.Label, msg})
		}
	}
	var rest []string
	for k, msg := range errs {
		if !known[k] && msg != "" {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		out = append(out, labelledError{orDefault(k, "Filter"), errs[k]})
	}
	return out
}

// auditErrorSlots are the FieldError slots of the audit filter, swapped out
// of band on every htmx filter request so that field messages follow the
// results.
var auditErrorSlots = func() string {
	ids := make([]string, 0, len(auditFields))
	for _, f := range auditFields {
		if f.Name != "page" {
			ids = append(ids, "#"+errID(f.Name))
		}
	}
	return strings.Join(ids, ",")
}()
