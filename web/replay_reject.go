package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
)

// rejectForm is an approver's rejection: why.
type rejectForm struct {
	Reason string
}

// Validate returns the reason, or an invalid error without one.
func (f rejectForm) Validate() (string, error) {
	reason := strings.TrimSpace(f.Reason)
	if reason == "" {
		return "", quarantine.Errorf(quarantine.EINVALID, "say why you reject it")
	}
	return reason, nil
}

// replayReject closes a request waiting for approval, with a reason.
func (s *Server) replayReject(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	if err := s.mayOnClass(c, req, authz.ActReject); err != nil {
		return err
	}
	reason, err := rejectForm{Reason: c.FormValue("reason")}.Validate()
	if err == nil {
		err = s.deps.Replays.Reject(c.Request().Context(), req.ID, userOf(c).Actor, reason, authz.RequestMeta(c))
	}
	if err != nil {
		return s.requestFormError(c, err, "reject")
	}
	s.flash(c, "Rejected.")
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}
