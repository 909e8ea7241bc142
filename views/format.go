package views

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
	s := span(d)
	if future {
		return "in " + s
	}
	return s + " ago"
}

// Until is when a deadline t comes, from now: as Age, but to the minute
// under two days ("in 3h 59m", where Age says "in 3h" of a four-hour
// expiry two seconds old and contradicts the policy's "4h").
func Until(t, now time.Time) string {
	d := t.Sub(now)
	if t.IsZero() || d < time.Hour || d >= 48*time.Hour {
		return Age(t, now)
	}
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return "in " + strconv.Itoa(h) + "h"
	}
	return "in " + strconv.Itoa(h) + "h " + strconv.Itoa(m) + "m"
}

// Waiting is how long something has waited since t, as a list of what
// waits says it: "waiting 6h" ("waiting 6h ago" reads as a time).
func Waiting(t, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := max(now.Sub(t), 0)
	if d < 10*time.Second {
		return "just submitted"
	}
	return "waiting " + span(d)
}

// span is d as Age writes it, rounded down: "45s", "6m", "6h", "3d".
func span(d time.Duration) string {
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
	return s
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

// pageTitle is the page's <title>, which holds text only: Shown writes
// any hidden character a title took from a request as its marker.
func pageTitle(p Page) string {
	if p.Title == "" {
		return "Quarantine"
	}
	return Shown(p.Title) + " · Quarantine"
}

func seqText(n int64) string { return strconv.FormatInt(n, 10) }

// draftObjectTitle explains an audit entry's object written as
// "#12 (draft)", unlinked (AuditRow.ObjectText).
const draftObjectTitle = "A replay draft: only the person who drafted it can open it, " +
	"so it is not linked; the request's entries from its submission on link it"

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

// confirmDelete is the question before a binding is removed. A browser's
// confirm dialog takes no markup: the person is named as Shown writes
// them, with the markers the page shows them with (Untrusted).
func confirmDelete(b Binding) string {
	who := b.Email
	if who == "" {
		who = b.Subject
	}
	return "Remove role " + b.Role + " on " + Shown(TenantLabel(b.Tenant)) + " from " + Shown(who) + "?"
}

// confirmSignOut is the question before every session of p ends, naming
// them as the page does: their email (or, without one, their identity),
// Shown with the page's markers, since the dialog takes no markup.
func confirmSignOut(p SessionPerson) string {
	who := p.Email
	if who == "" {
		who = p.Issuer + "|" + p.Subject
	}
	if p.Own {
		return "Sign yourself out of every session, this one too?"
	}
	return "Sign " + Shown(who) + " out of every session?"
}

func fieldID(name string) string { return "f-" + name }

// FieldID is the element id the Field component gives a field of name.
func FieldID(name string) string { return fieldID(name) }
func errID(name string) string   { return "f-" + name + "-error" }

func auditAction(m AuditListModel) string { return orDefault(m.Action, PathAudit) }

// actorNoMatch is the empty audit log's title and hint when its filter
// names an actor: the filter matches a whole verified email or subject
// (audit.Filter.Actor), never a part of one, and "oncall" finding nothing
// read as "oncall did nothing".
func actorNoMatch(f AuditFilter) (title, hint string) {
	title = "No events by exactly “" + Shown(f.Actor) + "”"
	if f != (AuditFilter{Actor: f.Actor}) {
		title += " match the other filters"
	}
	hint = "The actor filter matches a whole verified email or subject, not part of one."
	if f.From != "" || f.To != "" {
		hint += " Widen the time range, or clear the filter."
	}
	return title, hint
}

// auditFields are the filter parameters in form order, with their labels.
var auditFields = []struct{ Name, Label string }{
	{"actor", "Actor"}, {"action", "Action"}, {"tenant", "Tenant"}, {"outcome", "Outcome"},
	{"object", "Object"}, {"message_id", "Message id"}, {"operation_id", "Operation id"}, {"request", "Replay request"}, {"from", "From"}, {"to", "To"},
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

// Count writes n with thousands separators: 1234567 → "1,234,567".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// CappedCount writes a count that stopped at its cap: "10,000+" when
// capped.
func CappedCount(n int64, capped bool) string {
	if capped {
		return Count(n) + "+"
	}
	return Count(n)
}

// Bytes writes a size: "0 B", "812 B", "1.4 KB", "2.0 MB", "3.5 GB"
// (1 KB = 1,024 B).
func Bytes(n int64) string {
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1024*1024:
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + " KB"
	case n < 1024*1024*1024:
		return strconv.FormatFloat(float64(n)/(1024*1024), 'f', 1, 64) + " MB"
	default:
		return strconv.FormatFloat(float64(n)/(1024*1024*1024), 'f', 1, 64) + " GB"
	}
}

// Duration writes a period as a setting would: "7d", "36h", "90m", else
// Go's form.
func Duration(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d >= day && d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}

// ClassKind maps an error class to a badge kind.
func ClassKind(class string) string {
	switch class {
	case "permanent", "unknown_effect":
		return BadgeDanger
	case "schema_invalid", "policy", "max_deliveries":
		return BadgeWarn
	case "transient":
		return BadgeInfo
	}
	return BadgeNeutral
}

// StatusKind maps a dead letter status to a badge kind: green only when
// its effect happened (replayed, or resolved by hand); amber for whatever
// still needs someone (quarantined, a replay that did not happen, one
// whose outcome a person must settle).
func StatusKind(status string) string {
	switch status {
	case "quarantined", "replay_failed", "needs_reconciliation":
		return BadgeWarn
	case "replay_requested", "replaying":
		return BadgeInfo
	case "replayed", "resolved":
		return BadgeOK
	}
	return BadgeNeutral
}

// Label turns a snake_case value into words: "replay_failed" → "replay failed".
func Label(v string) string { return strings.ReplaceAll(v, "_", " ") }

// FirstLine returns the first line of s, cut to max runes with an ellipsis.
func FirstLine(s string, max int) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + " …"
	}
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max-1]) + "…"
	}
	return s
}

func idText(id int64) string { return strconv.FormatInt(id, 10) }

// streamSeqText is a stream sequence, "?" when unknown (0).
func streamSeqText(seq int64) string {
	if seq == 0 {
		return "?"
	}
	return strconv.FormatInt(seq, 10)
}

func ageText(t, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return Age(t, now)
}

func countText(n int64, capped bool, one, many string) string {
	if n == 1 && !capped {
		return "1 " + one
	}
	return CappedCount(n, capped) + " " + many
}

func joinList(vs []string) string { return strings.Join(vs, ", ") }

// PolicyText is a class description without its leading "class: ", which
// the page shows as a chip, as a sentence: its first letter capitalised
// (the policy file writes it to follow "class: ", in lowercase).
func PolicyText(class, describe string) string {
	return sentenceCase(strings.TrimPrefix(describe, class+": "))
}

// sentenceCase is s with its first letter in upper case.
func sentenceCase(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || !unicode.IsLower(r) {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// fieldErrors lists errs in the order of fields; other keys last.
func fieldErrors(fields []struct{ Name, Label string }, errs map[string]string) []labelledError {
	var out []labelledError
	known := map[string]bool{}
	for _, f := range fields {
		known[f.Name] = true
		if msg := errs[f.Name]; msg != "" {
			out = append(out, labelledError{f.Label, msg})
		}
	}
	for k, msg := range errs {
		if !known[k] && msg != "" {
			out = append(out, labelledError{orDefault(k, "Filter"), msg})
		}
	}
	return out
}

// errorSlots are the FieldError slots of a filter form, swapped out of band
// with the results (see auditErrorSlots).
func errorSlots(fields []struct{ Name, Label string }) string {
	ids := make([]string, 0, len(fields))
	for _, f := range fields {
		if f.Name != "page" && f.Name != "group" {
			ids = append(ids, "#"+errID(f.Name))
		}
	}
	return strings.Join(ids, ",")
}

// shortHash is the first 16 hex digits of a hash, for reading; the whole
// hash is in the element's title.
func shortHash(h string) string {
	if len(h) <= 16 {
		return h
	}
	return h[:16] + "…"
}

// ticketLabelMax is how many characters a ticket link's label shows.
const ticketLabelMax = 48

// TicketLabel is a ticket link as a short label: the host it goes to, as
// the parsed link has it (never text before an "@", which only looks like
// a host), and its path, cut to 48 characters. A host longer than that
// alone shows its end, the part a domain is registered by. A link that
// does not parse, or has no host, is shown without its scheme.
func TicketLabel(link string) string {
	u, err := url.Parse(link)
	if err != nil || u.Host == "" {
		s := strings.TrimPrefix(strings.TrimPrefix(link, "https://"), "http://")
		return FirstLine(strings.TrimSuffix(s, "/"), ticketLabelMax)
	}
	host := []rune(u.Host)
	if len(host) >= ticketLabelMax {
		return "…" + string(host[len(host)-ticketLabelMax+1:])
	}
	return FirstLine(strings.TrimSuffix(u.Host+u.EscapedPath(), "/"), ticketLabelMax)
}

// RateText is a publish rate as people read it: "1 message per second",
// "5,000 messages per second" (rate as the policy writes it, "2.5").
func RateText(rate string) string {
	if rate == "1" {
		return "1 message per second"
	}
	if n, err := strconv.ParseInt(rate, 10, 64); err == nil {
		rate = Count(n)
	}
	return rate + " messages per second"
}

// hasAction reports whether a is among the choices, or is a family's
// "<family>.*".
func hasAction(fs []ActionChoices, a string) bool {
	for _, f := range fs {
		if a == f.Family+".*" && len(f.Actions) > 1 || slices.Contains(f.Actions, a) {
			return true
		}
	}
	return false
}

// problemsAfterText introduces the problems a verification found after the
// first: n counts them all, the first included.
func problemsAfterText(n int64) string {
	if n <= 2 {
		return "It goes on past it, and found one more problem:"
	}
	return "It goes on past it, and found " + Count(n-1) + " more problems; the first of them:"
}

// nameParts splits an action's name after each dot and underscore:
// "replay.item.requested" gives "replay.", "item.", "requested". Joined,
// the parts are the name.
func nameParts(name string) []string {
	var parts []string
	for {
		i := strings.IndexAny(name, "._")
		if i < 0 {
			break
		}
		parts = append(parts, name[:i+1])
		name = name[i+1:]
	}
	if name != "" || parts == nil {
		parts = append(parts, name)
	}
	return parts
}

// ShortSHA is a hex digest as a table shows it: its first 12 characters
// and an ellipsis (the page puts the whole one in the title and the copy
// button).
func ShortSHA(hex string) string {
	if len(hex) <= 12 {
		return hex
	}
	return hex[:12] + "…"
}
