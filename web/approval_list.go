package web

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// maxListedEdits bounds the diffs a row of the approvals list shows.
const maxListedEdits = 3

// maxListedApprovals bounds the requests the approvals page lists.
const maxListedApprovals = 500

// approvalList shows requests waiting for approval in the approver's
// tenants, oldest first, with their age, expiry and approvals so far.
func (s *Server) approvalList(c echo.Context) error {
	ctx := c.Request().Context()
	u, me := userOf(c), userOf(c).Actor
	scope := s.replayScope(ctx, u, authz.ActApprove)
	reqs, _, err := s.deps.Replays.List(ctx, replay.ListFilter{Tenants: scope.Tenants, All: scope.All, Viewer: me,
		Status: replay.StatusPendingApproval, Limit: maxListedApprovals})
	if err != nil {
		return err
	}
	slices.Reverse(reqs) // the longest waiting first
	table := s.deps.Replays.Policy()
	var rows []views.ApprovalRow
	for _, r := range reqs {
		if !s.deps.Access.Can(u, r.Tenant, authz.ReplayObject(string(r.Class)), authz.ActApprove) {
			continue
		}
		row := views.ApprovalRow{
			ID: r.ID, URL: fmt.Sprintf("/replay/requests/%d", r.ID), Tenant: r.Tenant, Class: string(r.Class),
			Items: r.Items.String(), Requester: r.Requester.Display(), Reason: r.Reason, Intent: r.IntentHex(),
			Created: r.CreatedAt, Needs: describe(table, r.Class), Own: replaypolicy.SamePerson(r.Requester, me), Edited: r.PayloadEdited,
			Approvals: r.Count.String(), Expires: r.Expires,
		}
		if r.SubmittedAt != nil {
			row.Submitted = *r.SubmittedAt
		}
		if s.deps.Replays.ApprovedBy(r.Request, r.Approvals, me) {
			// Still listed: it waits for someone else, and the page says so
			// (the navigation's count leaves it out).
			row.YouApproved, row.StillNeeded = true, max(0, r.Count.Needed-r.Count.Have)
		}
		if r.PayloadEdited {
			edits, err := s.deps.Replays.Edits(ctx, r.ID, maxListedEdits+1)
			if err != nil {
				return err
			}
			if len(edits) > maxListedEdits {
				edits, row.MoreEdits = edits[:maxListedEdits], true
			}
			row.Edits = editViews(r.ID, edits)
		}
		rows = append(rows, row)
	}
	return s.render(c, http.StatusOK, views.Approvals(s.page(c, "Approvals", "approvals"), views.ApprovalsModel{Rows: rows, Now: time.Now()}))
}
