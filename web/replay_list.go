package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// replayPageSize is how many requests the replays page shows at a time.
const replayPageSize = 50

// replayStatuses are the statuses the replays page filters by.
var replayStatuses = []replay.Status{replay.StatusPendingApproval, replay.StatusApproved, replay.StatusRunning, replay.StatusDone,
	replay.StatusDoneWithProblems, replay.StatusRejected, replay.StatusCancelled, replay.StatusVoid, replay.StatusDraft}

// replayFilterForm is the replays page filter as typed in the URL.
type replayFilterForm struct {
	views.ReplayFilter
	Before string
}

func readReplayFilter(q url.Values) replayFilterForm {
	get := func(k string) string { return strings.TrimSpace(q.Get(k)) }
	return replayFilterForm{ReplayFilter: views.ReplayFilter{Status: get("status"), Tenant: get("tenant"), Class: get("class"),
		Mine: get("mine") == "1"}, Before: get("before")}
}

// Validate turns the form into a replay.ListFilter over tenants (the
// caller's scope) for viewer, with a message per bad field.
func (f replayFilterForm) Validate(tenants []string, viewer authz.User) (replay.ListFilter, map[string]string) {
	errs := map[string]string{}
	out := replay.ListFilter{Tenants: tenants, Viewer: viewer.Actor, Status: replay.Status(f.Status), Mine: f.Mine, Tenant: f.Tenant,
		Class: replaypolicy.Class(f.Class), Limit: replayPageSize}
	if f.Status != "" && !slices.Contains(replayStatuses, out.Status) {
		errs["status"] = "Choose one of the statuses."
	}
	if f.Tenant != "" && !slices.Contains(tenants, f.Tenant) {
		errs["tenant"] = "Choose one of your tenants."
	}
	if f.Class != "" && !slices.Contains(replaypolicy.KnownClasses(), out.Class) {
		errs["class"] = "Choose one of the replay classes."
	}
	if f.Before != "" {
		id, err := strconv.ParseInt(f.Before, 10, 64)
		if err != nil || id <= 0 {
			errs["page"] = "The page link is broken; start from the first page."
		}
		out.Before = id
	}
	if len(errs) == 0 {
		return out, nil
	}
	return out, errs
}

// replayList is the replays page: every request the user may see in their
// tenants (their own drafts, nobody else's), filtered, newest first.
func (s *Server) replayList(c echo.Context) error {
	ctx := c.Request().Context()
	u := userOf(c)
	tenants := s.deadLetterTenants(ctx, u, authz.ActRead)
	form := readReplayFilter(c.QueryParams())
	f, errs := form.Validate(tenants, u)
	m := views.ReplayListModel{Action: views.PathReplays, Filter: form.ReplayFilter, Errors: errs, Tenants: tenants, Now: time.Now()}
	for _, st := range replayStatuses {
		m.Statuses = append(m.Statuses, views.Option{Value: string(st), Label: views.Label(string(st))})
	}
	for _, cl := range replaypolicy.KnownClasses() {
		m.Classes = append(m.Classes, string(cl))
	}
	title := "Replays"
	if errs != nil {
		return s.render(c, http.StatusUnprocessableEntity, views.ReplayList(s.page(c, title, "replays"), m))
	}
	reqs, more, err := s.deps.Replays.List(ctx, f)
	if err != nil {
		return err
	}
	for _, r := range reqs {
		m.Rows = append(m.Rows, replayRow(r, u))
	}
	if more {
		m.NextURL = cursorURL(views.PathReplays, c.QueryParams(), "before", strconv.FormatInt(reqs[len(reqs)-1].ID, 10))
	}
	if f.Before != 0 {
		m.FirstURL = views.PathReplays + encodeQuery(without(c.QueryParams(), "before"))
	}
	return s.render(c, http.StatusOK, views.ReplayList(s.page(c, title, "replays"), m))
}

// replayRow is one request as the replays page lists it.
func replayRow(r replay.Listed, u authz.User) views.ReplayRow {
	row := views.ReplayRow{
		ID: r.ID, URL: fmt.Sprintf("/replay/requests/%d", r.ID), Tenant: r.Tenant, Class: string(r.Class), Status: string(r.Status),
		Items: r.ItemCount + r.SkippedCount, Ended: r.Progress.Ended(), Requester: r.Requester.Display(),
		Own: r.Requester.SameIdentity(u.Actor), Approvals: r.Count.String(), NeedsApproval: r.Count.Needed > 0, Expires: r.Expires,
		Reason: r.Reason, Edited: r.PayloadEdited,
	}
	if r.Status == replay.StatusDraft {
		row.URL = "/replay/batches/" + url.PathEscape(r.Batch) // a draft is reviewed where it was frozen
	}
	if r.SubmittedAt != nil {
		row.Submitted = *r.SubmittedAt
	}
	if r.ClosedBy.Identified() {
		row.ClosedBy = r.ClosedBy.Display()
		row.ClosedWhy = r.StatusReason
	}
	return row
}
