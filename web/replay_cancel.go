package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// cancelForm is the requester's cancel, with an optional why, and whether
// they confirmed it.
type cancelForm struct {
	Reason    string
	Confirmed bool
}

// Validate returns the reason as it is recorded.
func (f cancelForm) Validate() string { return strings.TrimSpace(f.Reason) }

// replayCancel stops the requester's own request once they confirmed it
// (anyone else is refused by the replay rules, and audited).
func (s *Server) replayCancel(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	if err := s.mayOnClass(c, req, authz.ActCancel); err != nil {
		return err
	}
	if !req.Status.Open() {
		// Nothing to confirm: the page the button was on is out of date.
		return s.requestFormError(c, quarantine.Errorf(quarantine.ECONFLICT, "Request %d is already %s: there is nothing left to cancel.",
			req.ID, views.Label(string(req.Status))), "cancel")
	}
	f := cancelForm{Reason: c.FormValue("reason"), Confirmed: c.FormValue(views.ConfirmedField) == "1"}
	if !f.Confirmed {
		return s.renderRequestConfirm(c, views.ConfirmModel{
			Title:  fmt.Sprintf("Cancel replay request %d?", req.ID),
			Lead:   "Nothing more of it will be published, and its dead letters that were not published go back to quarantine. What was published already stays published.",
			Reason: f.Reason, ReasonLabel: "Why (optional)", Button: "Cancel replay", Danger: true,
		}, nil)
	}
	if err := s.deps.Replays.Cancel(c.Request().Context(), req.ID, userOf(c).Actor, f.Validate(), authz.RequestMeta(c)); err != nil {
		return s.requestFormError(c, err, "cancel")
	}
	s.flash(c, "Cancelled. Nothing more will be published; what was published before stays published.")
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}
