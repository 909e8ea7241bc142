package web

import (
	"fmt"
	"net/url"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// replayPanel is the detail page's actions: replay (what its class needs),
// discard and resolve, and the replay requests that include it; each
// control only when the user may use it in the dead letter's tenant.
func (s *Server) replayPanel(c echo.Context, d dlq.DeadLetter) (templ.Component, error) {
	u := userOf(c)
	table := s.deps.Replays.Policy()
	class := table.ClassOf(d.ItemType, d.OriginalSubject).Class
	open := d.Status == dlq.StatusQuarantined || d.Status == dlq.StatusReplayFailed
	m := views.DeadLetterActions{
		ID: d.ID, Version: d.Version, Status: string(d.Status), Class: string(class), Needs: table.Describe(class),
		CanReplay:  open && s.deps.Access.Can(u, d.Tenant, authz.ReplayObject(string(class)), authz.ActRequest),
		ReplayURL:  "/replay",
		CanDiscard: open && s.deps.Access.Can(u, d.Tenant, authz.ObjDeadLetter, authz.ActDiscard),
		DiscardURL: fmt.Sprintf("/deadletters/%d/discard", d.ID),
		CanResolve: open && s.deps.Access.Can(u, d.Tenant, authz.ObjDeadLetter, authz.ActResolve),
		ResolveURL: fmt.Sprintf("/deadletters/%d/resolve", d.ID),
	}
	reqs, err := s.deps.Replays.RequestsFor(c.Request().Context(), d.ID)
	if err != nil {
		return nil, err
	}
	for _, r := range reqs {
		m.Requests = append(m.Requests, views.ApprovalRow{
			ID: r.ID, URL: fmt.Sprintf("/replay/requests/%d", r.ID), Requester: personLabel(r.Requester.Email, r.Requester.EmailVerified),
			Needs: string(r.Status), Class: string(r.Class),
		})
	}
	return views.DeadLetterActionsPanel("", m), nil
}

// bulkActions is the list's selection form: replay or close the checked
// rows, or act on everything the current filter selects; nil for people
// who may do none of it (the list then shows no checkboxes).
func (s *Server) bulkActions(c echo.Context, q url.Values, m views.DeadLetterListModel) templ.Component {
	u := userOf(c)
	b := views.BulkActionsModel{
		CanReplay:  PermittedSomewhere(s.deps.Access, u, Permission{Object: replayObjects, Action: authz.ActRequest}),
		CanDiscard: s.deps.Access.CanSomewhere(u, authz.ObjDeadLetter, authz.ActDiscard, nil),
		CanResolve: s.deps.Access.CanSomewhere(u, authz.ObjDeadLetter, authz.ActResolve, nil),
		ReturnTo:   views.PathDeadLetters + encodeQuery(q),
	}
	if !b.CanReplay && !b.CanDiscard && !b.CanResolve {
		return nil
	}
	if filter := without(q, "before", "after", "count"); len(filter) > 0 && len(m.Rows) > 0 {
		b.FilterQuery = encodeQuery(filter)
		if m.Counted {
			b.Matching = views.CappedCount(m.Count, m.CountCapped)
		}
	}
	return views.DeadLetterBulkActions("", b)
}
