package web

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// replayPageSize is how many requests the replays page shows at a time.
const replayPageSize = 50

// replayStatuses are the statuses the replays page filters by.
var replayStatuses = []replay.Status{replay.StatusPendingApproval, replay.StatusApproved, replay.StatusRunning, replay.StatusDone,
	replay.StatusDoneWithProblems, replay.StatusRejected, replay.StatusCancelled, replay.StatusVoid, replay.StatusDraft}

// The orders of the replays page ("order"): the viewer's own requests
// first (the default), or everyone's newest first.
const (
	orderMineFirst = ""
	orderNewest    = "newest"
)

// replayCursor is the replays page's "before": the id of the last row of
// the page before, "m" first when that row was the viewer's own.
var replayCursor = regexp.MustCompile(`^(m?)([1-9][0-9]{0,17})$`)

// maxRequesterFilter bounds the requester filter (an email address is at
// most 254 characters).
const maxRequesterFilter = 254

// maxIdentityPart bounds each of the requester identity filter's issuer
// and subject (as the audit log bounds them).
const maxIdentityPart = 512

// The query parameters of the requester identity filter: a requester's
// link sets them, the page shows them and offers to remove them.
const (
	paramRequesterIssuer  = "requester_issuer"
	paramRequesterSubject = "requester_subject"
)

// replayFilterForm is the replays page filter as typed in the URL.
type replayFilterForm struct {
	views.ReplayFilter
	Before string
	// mine and reconcile are the check boxes as the URL gives them: "1"
	// ticks one, nothing leaves it out, and anything else is refused (a
	// scripted ?reconcile=true would otherwise list every request).
	mine, reconcile string
	Now             time.Time         // what relative times count from
	text            map[string]string // text that cannot be stored, by field (formText)
	// Unknown are the URL's parameters that are none of the page's
	// (replayFilterParams, replayPageParams: unknownParams); the page
	// refuses them.
	Unknown []string
	// Repeated are the page's parameters the URL gives more than once
	// (repeatedParams); the page refuses them too.
	Repeated []string
}

// replayFilterParams are the query parameters of the replays page's
// filter; replayPageParams are the page's own, which select nothing.
var (
	replayFilterParams = []string{"status", "tenant", "class", "mine", "requester", paramRequesterIssuer, paramRequesterSubject,
		"from", "to", "reconcile"}
	replayPageParams = []string{"order", "before"}
)

// readReplayFilter reads the replays page's filter and cursor from q, and
// notes the names of any other parameter (Unknown) and of its own given
// twice (Repeated), which Validate refuses.
func readReplayFilter(q url.Values, now time.Time) replayFilterForm {
	t := readText(q)
	get := t.get
	f := replayFilterForm{ReplayFilter: views.ReplayFilter{Status: get("status"), Tenant: get("tenant"), Class: get("class"),
		Mine: get("mine") == "1", Requester: get("requester"), RequesterIssuer: q.Get(paramRequesterIssuer),
		RequesterSubject: q.Get(paramRequesterSubject), From: get("from"), To: get("to"), Order: get("order"),
		Reconcile: get("reconcile") == "1"},
		Before: get("before"), mine: get("mine"), reconcile: get("reconcile"), Now: now}
	f.text = t.Errors()
	f.Unknown = unknownParams(q, slices.Concat(replayFilterParams, replayPageParams))
	f.Repeated = repeatedParams(q, slices.Concat(replayFilterParams, replayPageParams))
	return f
}

// Validate turns the form into a replay.ListFilter over tenants (the
// caller's scope) for viewer, with a message per bad field.
func (f replayFilterForm) Validate(tenants []string, viewer authz.User) (replay.ListFilter, map[string]string) {
	errs := map[string]string{}
	out := replay.ListFilter{Tenants: tenants, Viewer: viewer.Actor, Status: replay.Status(f.Status), Mine: f.Mine, Tenant: f.Tenant,
		Class: replaypolicy.Class(f.Class), Requester: f.Requester, RequesterIssuer: f.RequesterIssuer, RequesterSubject: f.RequesterSubject,
		Reconcile: f.Reconcile, MineFirst: f.Order == orderMineFirst, Limit: replayPageSize}
	if f.Status != "" && !slices.Contains(replayStatuses, out.Status) {
		errs["status"] = "Choose one of the statuses."
	}
	if f.Tenant != "" && !slices.Contains(tenants, f.Tenant) {
		errs["tenant"] = "Choose one of your tenants."
	}
	if f.Class != "" && !slices.Contains(replaypolicy.KnownClasses(), out.Class) {
		errs["class"] = "Choose one of the replay classes."
	}
	if utf8.RuneCountInString(f.Requester) > maxRequesterFilter || strings.ContainsFunc(f.Requester, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		errs["requester"] = "Write the requester's email address, or its start (no spaces, at most 254 characters)."
	}
	if f.ByIdentity() && !validIdentity(f.RequesterIssuer, f.RequesterSubject) {
		errs["requester_identity"] = "The requester link is broken: remove it, or follow a requester's name again."
	}
	for name, v := range map[string]string{"mine": f.mine, "reconcile": f.reconcile} {
		if v != "" && v != "1" {
			errs[name] = "The link gives this box a value it does not take: tick the box, or leave it out."
		}
	}
	if f.Order != orderMineFirst && f.Order != orderNewest {
		errs["order"] = "Choose mine first or newest first."
	}
	out.From, out.To = timeRange(f.From, f.To, f.Now, errs)
	switch {
	case len(f.Unknown) > 0:
		errs[""] = unknownFilterText("The replays page", f.Unknown, replayFilterParams) +
			" No request was listed: without it, the list would show more than was asked."
	case len(f.Repeated) > 0:
		errs[""] = repeatedFilterText(f.Repeated, "No request was listed: with one of the values, the list would not be the one asked.")
	}
	if f.Before != "" {
		m := replayCursor.FindStringSubmatch(f.Before)
		if m == nil || (m[1] != "" && !out.MineFirst) {
			errs["page"] = "The page link is broken; start from the first page."
		} else {
			out.After.ID, _ = strconv.ParseInt(m[2], 10, 64) // at most 18 digits
			out.After.Own = m[1] != ""
		}
	}
	errs = addTextErrors(errs, f.text)
	if len(errs) == 0 {
		return out, nil
	}
	return out, errs
}

// replayList is the replays page: every request the user may see in their
// tenants (their own drafts, nobody else's), filtered, their own first,
// with the counts by status and item outcome of what the filter selects.
func (s *Server) replayList(c echo.Context) error {
	ctx := c.Request().Context()
	u := userOf(c)
	q := c.QueryParams()
	tenants := s.deadLetterTenants(ctx, u, authz.ActRead)
	form := readReplayFilter(q, authz.Now(ctx))
	f, errs := form.Validate(tenants, u)
	m := views.ReplayListModel{Action: views.PathReplays, Filter: form.ReplayFilter, Errors: errs, Tenants: tenants, Now: form.Now,
		Presets: presetLinks(views.PathReplays, q), Orders: orderLinks(q)}
	for _, st := range replayStatuses {
		m.Statuses = append(m.Statuses, views.Option{Value: string(st), Label: views.Label(string(st))})
	}
	for _, cl := range replaypolicy.KnownClasses() {
		m.Classes = append(m.Classes, string(cl))
	}
	if form.ByIdentity() {
		m.ClearRequesterURL = views.PathReplays + encodeQuery(without(q, "before", paramRequesterIssuer, paramRequesterSubject))
	}
	page := s.page(c, "Replays", "replays")
	if errs != nil {
		return s.render(c, http.StatusUnprocessableEntity, views.ReplayList(page, m))
	}
	reqs, more, err := s.deps.Replays.List(ctx, f)
	if err != nil {
		return err
	}
	counts, err := s.deps.Replays.Counts(ctx, f)
	if err != nil {
		return err
	}
	m.Counts = replayCounts(counts, q)
	for _, r := range reqs {
		m.Rows = append(m.Rows, replayRow(r, u, q, form.Now))
	}
	if form.ByIdentity() && len(reqs) > 0 {
		m.RequesterName = reqs[0].Requester.Display() // every row is theirs
	}
	if more {
		last := reqs[len(reqs)-1].Cursor()
		cursor := strconv.FormatInt(last.ID, 10)
		if last.Own {
			cursor = "m" + cursor
		}
		m.NextURL = cursorURL(views.PathReplays, q, "before", cursor)
	}
	if f.After.ID != 0 {
		m.FirstURL = views.PathReplays + encodeQuery(without(q, "before"))
	}
	return s.render(c, http.StatusOK, views.ReplayList(page, m))
}

// orderLinks are the two orders of the replays page, with q's filter.
func orderLinks(q url.Values) []views.TimePreset {
	var out []views.TimePreset
	for _, o := range []struct{ value, label string }{{orderMineFirst, "Mine first"}, {orderNewest, "Newest first"}} {
		next := without(q, "before", "order")
		if o.value != "" {
			next.Set("order", o.value)
		}
		out = append(out, views.TimePreset{Label: o.label, URL: views.PathReplays + encodeQuery(next), Active: q.Get("order") == o.value})
	}
	return out
}

// replayCounts are the counts of the replays page: requests by status,
// each a link to the list of that status, and the items of those that are
// no draft by outcome, as every page counts them (replay.ItemCounts).
func replayCounts(c replay.ListCounts, q url.Values) views.ReplayCounts {
	out := views.ReplayCounts{Requests: c.Matched, More: c.MatchedMore, Counted: c.Counted}
	for _, st := range replayStatuses {
		if n := c.ByStatus[st]; n > 0 {
			next := without(q, "before", "status")
			next.Set("status", string(st))
			out.ByStatus = append(out.ByStatus, views.CountChip{Value: string(st), Label: views.Label(string(st)), N: n,
				URL: views.PathReplays + encodeQuery(next)})
		}
	}
	n := c.Counts
	for _, o := range []struct {
		value string
		n     int
	}{
		{string(replay.JobReplayed), n.Replayed}, {replay.OutcomeApplied, n.Applied}, {string(replay.JobPending), n.ToGo}, {string(replay.JobUnknown), n.Unknown}, {string(replay.JobSkipped), n.Skipped},
		{string(replay.JobSuppressed), n.Suppressed}, {string(replay.JobBlocked), n.Blocked},
		{string(replay.JobNeedsReconciliation), n.NeedsReconciliation}, {string(replay.JobCancelled), n.Cancelled},
		{replay.OutcomeNotApplied, n.NotApplied}, {views.NotRunValue, n.NotRun},
	} {
		if o.n > 0 {
			out.Items = append(out.Items, views.CountChip{Value: o.value, Label: views.OutcomeText(o.value), N: o.n})
		}
	}
	return out
}

// replayRow is one request as the replays page lists it at now (q: the
// page's filter, which the requester's link narrows to them: to their
// identity, exactly, in place of any requester search, which matches the
// start of an email, verified or not).
func replayRow(r replay.Listed, u authz.User, q url.Values, now time.Time) views.ReplayRow {
	row := views.ReplayRow{
		ID: r.ID, URL: fmt.Sprintf("/replay/requests/%d", r.ID), Tenant: r.Tenant, Class: string(r.Class), Status: string(r.Status),
		Items: r.Items.String(), Total: r.Items.Total, CameBack: r.CameBack, Waiting: r.Items.NeedsReconciliation, Requester: r.Requester.Display(),
		Own: r.Requester.SameIdentity(u.Actor), Approvals: r.Count.String(), NeedsApproval: r.Count.Needed > 0, ApprovalsNeeded: r.Count.Needed,
		Expires: r.Expires, Lapse: string(r.Lapse), Expired: r.Expires != nil && !r.Expires.After(now),
		Reason: r.Reason, Edited: r.PayloadEdited,
	}
	if r.Status == replay.StatusDraft {
		row.URL = "/replay/batches/" + url.PathEscape(r.Batch) // a draft is reviewed where it was frozen
	}
	if r.Requester.Identified() {
		next := without(q, "before", "requester", paramRequesterIssuer, paramRequesterSubject)
		next.Set(paramRequesterIssuer, r.Requester.Issuer)
		next.Set(paramRequesterSubject, r.Requester.Subject)
		row.RequesterURL = views.PathReplays + encodeQuery(next)
	}
	if r.SubmittedAt != nil {
		row.Submitted = *r.SubmittedAt
	}
	if r.ClosedBy.Identified() {
		row.ClosedBy = r.ClosedBy.Display()
		row.ClosedWhy = r.StatusReason
	}
	if r.Status == replay.StatusVoid {
		row.Unreplayable, row.VoidWhy = unreplayable(r.Items), r.StatusReason
	}
	return row
}

// validIdentity reports whether issuer and subject are one identity as the
// requester filter takes it: both given, storable text, bounded, no
// control characters.
func validIdentity(issuer, subject string) bool {
	ok := func(s string) bool {
		return s != "" && dlq.StorableText(s) && utf8.RuneCountInString(s) <= maxIdentityPart &&
			!strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f })
	}
	return ok(issuer) && ok(subject)
}
