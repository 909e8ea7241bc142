package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// reconcileForm is what a person found when they checked the target of an
// item (Item, the :dl parameter) whose outcome nobody can know: applied,
// not applied (republish), or not applied (leave it), and what they
// checked; Settled is the episode of the outcome their page showed
// (replay.Item.Settled; "" when not sent).
type reconcileForm struct {
	Item, Choice, Note, Settled string
	text                        map[string]string // text that cannot be stored, by field (formText)
}

// typedReconcileKey keeps, in the echo context, the reconcile form a
// request's page is rendered again for (typedReconcile).
const typedReconcileKey = "replay.typedReconcile"

// typedReconcile is the reconcile form sent that the page now rendered
// refuses, or the zero form.
func typedReconcile(c echo.Context) reconcileForm {
	f, _ := c.Get(typedReconcileKey).(reconcileForm)
	return f
}

// Validate returns what the replay service takes; whether the choice and
// note will do is the replay rules' to say (JudgeReconcile), but for a
// note that cannot be stored and an episode that is none (invalid: read
// as none, it would settle whichever attempt the item waits about now).
func (f reconcileForm) Validate() (replay.ReconcileInput, error) {
	if msg := f.text["note"]; msg != "" {
		return replay.ReconcileInput{}, quarantine.Errorf(quarantine.EINVALID, "%s", msg)
	}
	in := replay.ReconcileInput{Choice: replaypolicy.Choice(strings.TrimSpace(f.Choice)), Note: strings.TrimSpace(f.Note)}
	if f.Settled != "" {
		n, err := strconv.ParseInt(f.Settled, 10, 32)
		if err != nil || n < 0 {
			return replay.ReconcileInput{}, quarantine.Errorf(quarantine.EINVALID,
				"the form does not say which attempt of the item you decided about, so nothing was recorded: decide again on the page as it is now")
		}
		settled := int32(n)
		in.Settled = &settled
	}
	return in, nil
}

// replayReconcile settles one item of a request whose outcome nobody can
// know, as an approver of its class in its tenant decided; audited.
func (s *Server) replayReconcile(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	if err := s.mayOnClass(c, req, authz.ActReconcile); err != nil {
		return err
	}
	dl, ok := pathID(c, "dl")
	if !ok {
		return quarantine.Errorf(quarantine.ENOTFOUND, "There is no such item.")
	}
	t, err := readFormText(c)
	if err != nil {
		return err
	}
	form := reconcileForm{Item: c.Param("dl"), Choice: t.raw("choice"), Note: t.raw("note"), Settled: strings.TrimSpace(t.raw("settled"))}
	form.text = t.Errors()
	in, err := form.Validate()
	if err == nil {
		err = s.deps.Replays.Reconcile(c.Request().Context(), req.ID, dl, userOf(c).Actor, in, authz.RequestMeta(c))
	}
	if err != nil {
		c.Set(typedReconcileKey, form) // the page that comes back keeps the note as typed
		return s.requestFormError(c, err, "reconcile-"+c.Param("dl"))
	}
	s.flash(c, map[replaypolicy.Choice]string{
		replaypolicy.Applied: "Recorded as applied.", replaypolicy.Republish: "Recorded as not applied: a worker will publish it again under the same message id; follow it below.",
		replaypolicy.NotApplied: "Recorded as not applied: the dead letter is back in quarantine.",
	}[in.Choice])
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}
