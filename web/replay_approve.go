package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// approveForm is what an approver sends: the intent they reviewed, the
// request's version their page read it at and, for classes with typed
// confirmation, what they typed.
type approveForm struct {
	Intent       string
	Version      string
	Confirmation string
}

// Validate returns what the replay service approves; whether the intent
// and the version are still the request's and the phrase is right is its
// to say.
func (f approveForm) Validate() replay.ApproveInput {
	return replay.ApproveInput{IntentHex: strings.TrimSpace(f.Intent), Version: versionRead(f.Version), Confirmation: strings.TrimSpace(f.Confirmation)}
}

// versionRead is the request's version a form's hidden "version" field
// says its page was read at (approve, reject). One the form did not send,
// or one that is no version (versions count from 1), is -1, which the
// service refuses (replaypolicy.JudgeRead): read as 0 it would say
// nothing, and an edit there and back would pass.
func versionRead(field string) int {
	if v, err := strconv.ParseInt(field, 10, 32); err == nil && v >= 1 {
		return int(v)
	}
	return -1
}

// typedApprovalKey keeps, in the echo context, the phrase an approval
// refused for it was typed as (the request page shows it again).
const typedApprovalKey = "replay.typedApproval"

// replayApprove records the approver's sign-off of the intent they saw.
func (s *Server) replayApprove(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	if err := s.mayOnClass(c, req, authz.ActApprove); err != nil {
		return err
	}
	v, err := s.requestView(c)
	if err != nil {
		return err
	}
	if why := unshown(v); why != "" {
		// The page could not show every item or every edit: nobody approves
		// what they could not read.
		return s.requestFormError(c, quarantine.Errorf(quarantine.ECONFLICT, "%s", why), "approve")
	}
	t, err := readFormText(c)
	if err != nil {
		return err
	}
	form := approveForm{Intent: t.raw("intent"), Version: t.raw("version"), Confirmation: t.raw("confirmation")}
	if errs := t.Errors(); errs != nil {
		// Text no one could have typed from the page (a NUL, bytes that
		// are not UTF-8): said at the field, as every form says it.
		var err error = quarantine.Errorf(quarantine.EINVALID, "%s", dlq.UnstorableTextMessage)
		if _, typed := errs["confirmation"]; typed {
			err = fmt.Errorf("%w: %w", replay.ErrConfirmation, err)
		}
		return s.requestFormError(c, err, "approve")
	}
	d, err := s.deps.Replays.Approve(c.Request().Context(), req.ID, userOf(c).Actor, form.Validate(), authz.RequestMeta(c))
	if err != nil {
		if errors.Is(err, replay.ErrConfirmation) {
			// The phrase mistyped comes back as typed, to correct; any
			// other refusal (the intent or the version moved on) asks for
			// it afresh.
			c.Set(typedApprovalKey, form.Confirmation)
		}
		return s.requestFormError(c, err, "approve")
	}
	count := replay.ApprovalCount{Have: d.ApprovalsHave, Needed: d.ApprovalsNeeded}
	if d.Ready {
		// Not "runs now": an item may wait for its original's duplicate
		// window, its slot in the rate, or its owning service's answer.
		s.flash(c, "Approved ("+count.String()+" approvals): the workers take it from here, at its rate; this page shows each item as it goes, and why one waits.")
	} else {
		s.flash(c, "Approval recorded: "+count.String()+" approvals.")
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}
