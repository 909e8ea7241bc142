package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
)

// cancelForm is the requester's cancel, with an optional why.
type cancelForm struct {
	Reason string
}

// Validate returns the reason as it is recorded.
func (f cancelForm) Validate() string { return strings.TrimSpace(f.Reason) }

// replayCancel stops the requester's own request (anyone else is refused
// by the replay rules, and audited).
func (s *Server) replayCancel(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	if err := s.mayOnClass(c, req, authz.ActCancel); err != nil {
		return err
	}
	reason := cancelForm{Reason: c.FormValue("reason")}.Validate()
	if err := s.deps.Replays.Cancel(c.Request().Context(), req.ID, userOf(c).Actor, reason, authz.RequestMeta(c)); err != nil {
		return s.requestFormError(c, err, "cancel")
	}
	s.flash(c, "Cancelled: nothing not yet published will be.")
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}
