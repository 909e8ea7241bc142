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

// rejectForm is an approver's rejection: the intent and the request's
// version their page read it at (as the approve form sends them), why,
// and whether they confirmed.
type rejectForm struct {
	Intent    string
	Version   string
	Reason    string
	Confirmed bool
	text      map[string]string // text that cannot be stored, by field (formText)
}

// Validate returns what the replay service rejects, or an invalid error
// without a reason; whether the intent and the version are still the
// request's is the service's to say, as for an approval.
func (f rejectForm) Validate() (replay.RejectInput, error) {
	reason := strings.TrimSpace(f.Reason)
	switch {
	case f.text["reason"] != "":
		return replay.RejectInput{}, quarantine.Errorf(quarantine.EINVALID, "%s", f.text["reason"])
	case reason == "":
		return replay.RejectInput{}, quarantine.Errorf(quarantine.EINVALID, "Say why you reject it: the requester reads it.")
	}
	return replay.RejectInput{IntentHex: strings.TrimSpace(f.Intent), Version: versionRead(f.Version), Reason: reason}, nil
}

// fields are the form's hidden fields, which its confirmation page posts
// again: a rejection confirmed there is of the version the request page
// was read at.
func (f rejectForm) fields() []views.Hidden {
	return []views.Hidden{{Name: "intent", Value: f.Intent}, {Name: "version", Value: f.Version}}
}

// replayReject closes a request waiting for approval, with a reason, once
// the approver confirmed it (the confirmation page, or app.js's dialog).
func (s *Server) replayReject(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	if err := s.mayOnClass(c, req, authz.ActReject); err != nil {
		return err
	}
	if req.Status != replay.StatusPendingApproval {
		return s.requestFormError(c, quarantine.Errorf(quarantine.ECONFLICT, "Request %d is %s, not waiting for approval: there is nothing to reject.",
			req.ID, views.Label(string(req.Status))), "reject")
	}
	t, err := readFormText(c)
	if err != nil {
		return err
	}
	f := rejectForm{Intent: t.raw("intent"), Version: t.raw("version"), Reason: t.raw("reason"), Confirmed: t.raw(views.ConfirmedField) == "1"}
	f.text = t.Errors()
	in, err := f.Validate()
	if err != nil || !f.Confirmed {
		return s.renderRequestConfirm(c, views.ConfirmModel{
			Title:  fmt.Sprintf("Reject replay request %d?", req.ID),
			Lead:   "Nothing of it will be published. The requester sees who rejected it and why; to replay these dead letters later, someone requests again.",
			Fields: f.fields(),
			Reason: f.Reason, ReasonLabel: "Why you reject it", ReasonRequired: true, Button: "Reject request", Danger: true,
		}, err)
	}
	if err := s.deps.Replays.Reject(c.Request().Context(), req.ID, userOf(c).Actor, in, authz.RequestMeta(c)); err != nil {
		// A page read before the requester's edit is refused as its
		// approval is: the request page as it is now (409).
		return s.requestFormError(c, err, "reject")
	}
	s.flash(c, "Rejected.")
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}

// renderRequestConfirm writes the confirmation page of an action on the
// replay request of the :id parameter: m posts back to this route and
// leads back to the request; err (invalid input) is shown at the reason
// (422).
func (s *Server) renderRequestConfirm(c echo.Context, m views.ConfirmModel, err error) error {
	m.Action, m.BackURL = c.Request().URL.Path, "/replay/requests/"+c.Param("id")
	status := http.StatusOK
	if err != nil {
		m.Errors, status = map[string]string{"reason": quarantine.ErrorMessage(err)}, http.StatusUnprocessableEntity
	}
	return s.render(c, status, views.Confirm(s.page(c, m.Title, "approvals"), m))
}
