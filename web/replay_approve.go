package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/views"
)

// replayApprove records the approver's sign-off of the intent they saw.
func (s *Server) replayApprove(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	if !s.deps.Access.Can(userOf(c), req.Tenant, authz.ReplayObject(string(req.Class)), authz.ActApprove) {
		return s.deny(c, req.Tenant, authz.ReplayObject(string(req.Class))+":approve", fmt.Sprintf("replay request %d", req.ID))
	}
	d, err := s.deps.Replays.Approve(c.Request().Context(), req.ID, userOf(c).Actor,
		replay.ApproveInput{IntentHex: c.FormValue("intent"), Confirmation: c.FormValue("confirmation")}, authz.RequestMeta(c))
	if err != nil {
		return s.requestFormError(c, err, "approve")
	}
	if d.Ready {
		s.flash(c, "Approved: the replay runs now.")
	} else {
		s.flash(c, "Approval recorded. "+d.Reason)
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}

// replayReject closes a request waiting for approval, with a reason.
func (s *Server) replayReject(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	if !s.deps.Access.Can(userOf(c), req.Tenant, authz.ReplayObject(string(req.Class)), authz.ActReject) {
		return s.deny(c, req.Tenant, authz.ReplayObject(string(req.Class))+":reject", fmt.Sprintf("replay request %d", req.ID))
	}
	if strings.TrimSpace(c.FormValue("reason")) == "" {
		return s.requestFormError(c, quarantine.Errorf(quarantine.EINVALID, "say why you reject it"), "reject")
	}
	if err := s.deps.Replays.Reject(c.Request().Context(), req.ID, userOf(c).Actor, c.FormValue("reason"), authz.RequestMeta(c)); err != nil {
		return s.requestFormError(c, err, "reject")
	}
	s.flash(c, "Rejected.")
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}

// replayCancel stops the requester's own request.
func (s *Server) replayCancel(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	err = s.deps.Replays.Cancel(c.Request().Context(), req.ID, userOf(c).Actor, c.FormValue("reason"), authz.RequestMeta(c))
	if err != nil {
		return s.requestFormError(c, err, "cancel")
	}
	s.flash(c, "Cancelled: nothing not yet published will be.")
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}

// requestFormError re-renders the request page with the message next to
// the form that failed, for conflicts (409) and invalid input (422); any
// other error goes to the error handler.
func (s *Server) requestFormError(c echo.Context, err error, field string) error {
	code := quarantine.ErrorCode(err)
	if code != quarantine.ECONFLICT && code != quarantine.EINVALID {
		return err
	}
	msg := quarantine.ErrorMessage(err)
	errs := map[string]string{field: msg}
	if field == "approve" && code == quarantine.EINVALID {
		errs["confirmation"] = msg
	}
	m, merr := s.requestModel(c, errs)
	if merr != nil {
		return merr
	}
	if field == "approve" && !m.CanApprove {
		m.Errors = errs
		s.deps.Log.Debug("approval refused", "err", err)
	}
	p := s.page(c, fmt.Sprintf("Replay request %d", m.ID), "approvals")
	p.Flash = append(p.Flash, views.Flash{Kind: views.FlashError, Text: msg})
	return s.render(c, errorStatus(err), views.ReplayRequest(p, m))
}
