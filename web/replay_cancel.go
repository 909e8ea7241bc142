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
	text      map[string]string // text that cannot be stored, by field (formText)
}

// Validate returns the reason as it is recorded, or an invalid error for
// one that cannot be.
func (f cancelForm) Validate() (string, error) {
	if msg := f.text["reason"]; msg != "" {
		return "", quarantine.Errorf(quarantine.EINVALID, "%s", msg)
	}
	return strings.TrimSpace(f.Reason), nil
}

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
	t, err := readFormText(c)
	if err != nil {
		return err
	}
	f := cancelForm{Reason: t.raw("reason"), Confirmed: t.raw(views.ConfirmedField) == "1"}
	f.text = t.Errors()
	reason, err := f.Validate()
	if err != nil || !f.Confirmed {
		return s.renderRequestConfirm(c, views.ConfirmModel{
			Title:  fmt.Sprintf("Cancel replay request %d?", req.ID),
			Lead:   "Nothing more of it will be published, and its dead letters that were not published go back to quarantine. What was published already stays published.",
			Reason: f.Reason, ReasonLabel: "Why (optional)", Button: "Cancel replay", Danger: true,
		}, err)
	}
	if err := s.deps.Replays.Cancel(c.Request().Context(), req.ID, userOf(c).Actor, reason, authz.RequestMeta(c)); err != nil {
		return s.requestFormError(c, err, "cancel")
	}
	s.flash(c, "Cancelled. Nothing more will be published; what was published before stays published.")
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}
