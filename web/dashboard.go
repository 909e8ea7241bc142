package web

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// Choices of the dashboard: the chart span and the age past which the
// oldest unresolved dead letter turns red (default 1h).
var (
	dashboardSpans = map[string]time.Duration{"24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour}
	staleChoices   = []views.Option{
		{Value: "15m", Label: "15 minutes"}, {Value: "30m", Label: "30 minutes"}, {Value: "1h", Label: "1 hour"},
		{Value: "4h", Label: "4 hours"}, {Value: "24h", Label: "24 hours"},
	}
)

const (
	defaultSpan  = "24h"
	defaultStale = "1h"
)

// dashboardForm is the dashboard's parameters as typed in the URL.
type dashboardForm struct {
	Span, Stale string
}

func readDashboardForm(q url.Values) dashboardForm {
	return dashboardForm{Span: q.Get("span"), Stale: q.Get("stale")}
}

// Validate returns the span and threshold to use, falling back to the
// defaults, with a message per value it did not understand.
func (f *dashboardForm) Validate() (span, stale time.Duration, errs map[string]string) {
	errs = map[string]string{}
	if f.Span == "" {
		f.Span = defaultSpan
	}
	if _, ok := dashboardSpans[f.Span]; !ok {
		errs["span"] = "The chart shows 24h or 7d; showing 24h."
		f.Span = defaultSpan
	}
	if f.Stale == "" {
		f.Stale = defaultStale
	}
	stale, err := time.ParseDuration(f.Stale)
	if err != nil || !hasChoice(staleChoices, f.Stale) {
		errs["stale"] = "The age threshold is one of 15m, 30m, 1h, 4h, 24h; using 1h."
		f.Stale = defaultStale
		stale = time.Hour
	}
	if len(errs) == 0 {
		errs = nil
	}
	return dashboardSpans[f.Span], stale, errs
}

// sessionDashboardStale keeps the dashboard's "Oldest red after" chosen in
// the person's browser session (as the time zone is kept there), so the
// nav's plain link to the dashboard shows it again.
const sessionDashboardStale = "dashboard_stale"

// dashboardStale validates form (Validate), the threshold taken from the
// session when the URL names none: a threshold chosen, and valid, is kept
// for the next visit when the console's own page chose it (not a link of
// another site's: authz.StartedOutside); one kept that is no longer a
// choice is dropped quietly (the person did not just type it).
func (s *Server) dashboardStale(c echo.Context, form *dashboardForm) (span, stale time.Duration, errs map[string]string) {
	ctx := c.Request().Context()
	kept := form.Stale == ""
	if kept {
		form.Stale = s.deps.Sessions.GetString(ctx, sessionDashboardStale)
	}
	span, stale, errs = form.Validate()
	switch {
	case kept && errs["stale"] != "":
		delete(errs, "stale")
		if len(errs) == 0 {
			errs = nil
		}
		s.deps.Sessions.Remove(ctx, sessionDashboardStale)
	case !kept && errs["stale"] == "" && !authz.StartedOutside(c.Request()):
		// Chosen on the console's own page. A link of another site, or
		// one opened from outside (a chat message, a bookmark), shows the
		// dashboard with it this once: the person chose nothing to keep.
		s.deps.Sessions.Put(ctx, sessionDashboardStale, form.Stale)
	}
	return span, stale, errs
}

func hasChoice(opts []views.Option, v string) bool {
	for _, o := range opts {
		if o.Value == v {
			return true
		}
	}
	return false
}

// dashboard is the home page of people who may read dead letters: the
// web/auth.go home handler sends them here.
func (s *Server) dashboard(c echo.Context) error {
	ctx := c.Request().Context()
	form := readDashboardForm(c.QueryParams())
	span, stale, errs := s.dashboardStale(c, &form)
	tenants := s.deadLetterTenants(ctx, userOf(c), authz.ActRead)
	now := authz.Now(ctx) // the database's clock, which the counters' minutes and the oldest dead letter compare with
	// The replays page's scope (web/replay_list.go): the count is of what
	// the line's links list.
	replays := replay.AttentionOf(tenants, userOf(c).Actor, now)
	d, err := s.deps.DeadLetters.Dashboard(ctx, dlq.DashboardQuery{Tenants: tenants, Now: now, Span: span, Also: []dlq.BatchRead{replays}})
	if err != nil {
		return err
	}
	m := dashboardModel(d, now, stale)
	m.Replays = replayAttention(replays)
	everyTenant := s.deps.Access.Scope(userOf(c), authz.ObjDeadLetter, authz.ActRead, nil).All
	var health dlq.IngestHealth
	if s.deps.IngestHealth != nil {
		health = s.deps.IngestHealth()
		m.Ingest = ingestLagView(health, now, everyTenant)
	}
	var shortest replaypolicy.Keep
	if m.Retention, shortest, err = s.activeRetention(ctx, d.ActiveTerms, tenants); err != nil {
		return err
	}
	m.Retention.LastPurgeAt, m.Retention.LastPurgeRows = d.LastPurge.At, d.LastPurge.Rows
	snap, err := s.deps.DeadLetters.Counters().Snapshot(ctx)
	if err != nil {
		return err
	}
	m.Storage = storageView(snap, health, s.deps.DLQStream, s.deps.DLQMaxAge, shortest)
	if !everyTenant {
		// One stream holds every tenant's dead letters: its size and oldest
		// message are other tenants' volume to a reader of some, and nothing
		// they can act on (its limits are the operator's settings). The day
		// partitions are every tenant's too: a past day's stays while any
		// tenant has a dead letter of it, so their count and first day tell
		// on how many days, and since when, others had some.
		m.Storage = views.StorageView{OthersHidden: true}
	}
	m.Action, m.StaleValue, m.StaleOptions, m.SpanValue = views.PathDashboard, form.Stale, staleChoices, form.Span
	m.SpanURLs = map[string]string{}
	for k := range dashboardSpans {
		m.SpanURLs[k] = views.PathDashboard + encodeQuery(url.Values{"span": {k}, "stale": {form.Stale}})
	}
	// The hours are UTC hours, whatever the person's time zone setting
	// (views.chartZone says why): the title says so too.
	m.Chart.Title = "Arrivals per hour (UTC), last 24 hours"
	if form.Span == "7d" {
		m.Chart.Title = "Arrivals per hour (UTC), last 7 days"
	}
	p := s.page(c, "Dashboard", "dashboard")
	status := http.StatusOK
	for _, msg := range errs {
		p.Flash = append(p.Flash, views.Flash{Kind: views.FlashError, Text: msg})
		status = http.StatusUnprocessableEntity
	}
	return s.render(c, status, views.Dashboard(p, m))
}

func dashboardModel(d dlq.Dashboard, now time.Time, stale time.Duration) views.DashboardModel {
	m := views.DashboardModel{Now: now, StaleAfter: stale}
	m.Total.ListURL = listURL("status", views.StatusUnresolved)
	for _, t := range d.Tenants {
		row := views.TenantSummaryRow{
			Tenant: t.Tenant, Unresolved: t.Unresolved, Total: t.Total, Oldest: t.OldestUnresolved,
			Stale:    !t.OldestUnresolved.IsZero() && now.Sub(t.OldestUnresolved) > stale,
			LastHour: t.LastHour, LastDay: t.LastDay, ListURL: listURL("tenant", t.Tenant, "status", views.StatusUnresolved),
		}
		if t.OldestUnresolvedID != 0 {
			// The alarm leads to the dead letter it is about (the list is
			// newest first: the oldest may be pages away).
			row.OldestURL = deadLetterURL(t.OldestUnresolvedID)
		}
		m.Tenants = append(m.Tenants, row)
		m.Total.Unresolved += t.Unresolved
		m.Total.Total += t.Total
		m.Total.LastHour += t.LastHour
		m.Total.LastDay += t.LastDay
		if !t.OldestUnresolved.IsZero() && (m.Total.Oldest.IsZero() || t.OldestUnresolved.Before(m.Total.Oldest)) {
			m.Total.Oldest, m.Total.OldestURL = t.OldestUnresolved, row.OldestURL
		}
		m.Total.Stale = m.Total.Stale || row.Stale
	}
	for _, b := range d.Arrivals {
		m.Chart.Bars = append(m.Chart.Bars, views.ChartBar{Start: b.Start, N: b.N})
		m.Chart.Total += b.N
		m.Chart.Max = max(m.Chart.Max, b.N)
	}
	m.ByItemType = dimensionRows(d.ByItemType, "type")
	if more := d.ItemTypesUnresolved - int64(len(m.ByItemType)); more > 0 {
		// The rest are in the list, whose item type filter takes any.
		m.MoreItemTypes = views.DimensionMore{N: more, URL: listURL("status", views.StatusUnresolved)}
	}
	m.ByErrorClass = dimensionRows(d.ByErrorClass, "class")
	for _, g := range d.TopGroups {
		m.TopGroups = append(m.TopGroups, groupRow(g, views.StatusUnresolved))
	}
	m.Snoozed = snoozedHint(d.Snoozed, views.PathGroups+encodeQuery(url.Values{"state": {"snoozed"}}))
	return m
}

// replayAttention is the dashboard's line on the replay requests that went
// wrong, each count linking to the replays page filtered as it counted.
func replayAttention(a *replay.Attention) views.ReplayAttention {
	return views.ReplayAttention{
		Reconcile: a.ReconcileN, Problems: a.ProblemsN, Most: replay.AttentionMost,
		ReconcileURL: views.PathReplays + encodeQuery(url.Values{"reconcile": {"1"}}),
		ProblemsURL: views.PathReplays + encodeQuery(url.Values{"status": {string(replay.StatusDoneWithProblems)},
			"from": {fmt.Sprintf("now-%dd", replay.ProblemsSince/(24*time.Hour))}}),
		ProblemsDays: int(replay.ProblemsSince / (24 * time.Hour)),
	}
}

// dimensionRows keeps the values with unresolved dead letters.
func dimensionRows(ds []dlq.DimensionCount, param string) []views.DimensionRow {
	var out []views.DimensionRow
	var top int64
	for _, d := range ds {
		top = max(top, d.Unresolved)
	}
	for _, d := range ds {
		if d.Unresolved == 0 {
			continue
		}
		out = append(out, views.DimensionRow{
			Value: d.Value, Unresolved: d.Unresolved, Total: d.Total, Share: float64(d.Unresolved) / float64(top),
			URL: listURL(param, d.Value, "status", views.StatusUnresolved),
		})
	}
	return out
}
