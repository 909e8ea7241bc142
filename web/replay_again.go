package web

import (
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/views"
)

// replayAgain drafts a new replay of what an ended request did not replay
// (cancelled or stopped before it was published, settled "not applied",
// never run) and is back in quarantine, and sends the person to confirm
// it: the dead letters of the request, not a filter of the list, where
// they are mixed with those that arrived since. The selection is judged
// afresh by the draft of any selection (startReplay, as the list's
// Replay… does): the rules, classes and approvals as they are now; none of
// the ended request's approvals counts for it. The route needs request on
// the request's class in its tenant (the table); another tenant's request
// is not found.
func (s *Server) replayAgain(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	if err := s.mayOnClass(c, req, authz.ActRequest); err != nil {
		return err
	}
	if !req.MayRequestAgain() {
		return s.requestFormError(c, quarantine.Errorf(quarantine.ECONFLICT, "Request %d is %s: %s", req.ID,
			views.Label(string(req.Status)), notAgainWhy(req)), "again")
	}
	ids, err := s.deps.Replays.NotReplayed(c.Request().Context(), req.ID)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return s.requestFormError(c, quarantine.Errorf(quarantine.ECONFLICT,
			"Nothing of request %d is back in quarantine to request again: what it did not replay was resolved, discarded or requested since.", req.ID), "again")
	}
	return s.startReplay(c, ids, "", "", nil)
}

// notAgainWhy says why what req did not replay is not requested again
// from its page (replay.Request.MayRequestAgain).
func notAgainWhy(req replay.Request) string {
	if req.Status == replay.StatusRejected {
		return "an approver refused these items; select them on the dead letter list to ask again."
	}
	return "it still holds its items."
}

// requestAgainForm is the request page's offer to request again what req
// did not replay, with how many dead letters that is: none (Count 0) when
// it may not be (MayRequestAgain), the viewer may not request replays of
// its class in its tenant, or nothing of it is back in quarantine.
func (s *Server) requestAgainForm(c echo.Context, req replay.Request) (views.RequestAgainForm, error) {
	if !req.MayRequestAgain() || !s.deps.Access.Can(userOf(c), req.Tenant, authz.ReplayObject(string(req.Class)), authz.ActRequest) {
		return views.RequestAgainForm{}, nil
	}
	n, err := s.deps.Replays.CountNotReplayed(c.Request().Context(), req.ID)
	if err != nil {
		return views.RequestAgainForm{}, err
	}
	return views.RequestAgainForm{URL: fmt.Sprintf("/replay/requests/%d/again", req.ID), Count: n}, nil
}
