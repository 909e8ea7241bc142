package web

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// maxListedEdits bounds the diffs a row of the approvals list shows.
const maxListedEdits = 3

// approvalList shows requests waiting for approval in the approver's tenants.
func (s *Server) approvalList(c echo.Context) error {
	ctx := c.Request().Context()
	u, me := userOf(c), userOf(c).Actor
	scope := s.replayScope(ctx, u, authz.ActApprove)
	reqs, err := s.deps.Replays.Pending(ctx, scope.Tenants, scope.All)
	if err != nil {
		return err
	}
	table := s.deps.Replays.Policy()
	var rows []views.ApprovalRow
	for _, r := range reqs {
		if !s.deps.Access.Can(u, r.Tenant, authz.ReplayObject(string(r.Class)), authz.ActApprove) {
			continue
		}
		row := views.ApprovalRow{
			ID: r.ID, URL: fmt.Sprintf("/replay/requests/%d", r.ID), Tenant: r.Tenant, Class: string(r.Class),
			Items: r.ItemCount, Requester: personLabel(r.Requester.Email, r.Requester.EmailVerified), Reason: r.Reason, Intent: r.IntentHex(),
			Created: r.CreatedAt, Needs: describe(table, r.Class), Own: replaypolicy.SamePerson(r.Requester, me), Edited: r.PayloadEdited,
		}
		if r.PayloadEdited {
			edits, err := s.deps.Replays.Edits(ctx, r.ID, maxListedEdits)
			if err != nil {
				return err
			}
			row.Edits = editViews(edits)
		}
		rows = append(rows, row)
	}
	return s.render(c, http.StatusOK, views.Approvals(s.page(c, "Approvals", "approvals"), rows))
}
