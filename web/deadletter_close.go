package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// closeKind is discard or resolve: the status it sets, the permission it
// needs and how the pages name it.
type closeKind struct {
	to         dlq.Status
	act        string
	path       string // "discard": the routes' last word
	verb, done string // "Discard", "discarded"
	// title and button put "3 dead letters" into a question and a label.
	title, button string
	lead          string
}

var (
	discardKind = closeKind{to: dlq.StatusDiscarded, act: authz.ActDiscard, path: "discard", verb: "Discard", done: "discarded",
		title: "Discard %s?", button: "Discard %s",
		lead: "Discarded dead letters are kept, with your reason, but never replayed. Nothing changes until you confirm."}
	resolveKind = closeKind{to: dlq.StatusResolved, act: authz.ActResolve, path: "resolve", verb: "Mark resolved", done: "marked resolved",
		title: "Mark %s resolved?", button: "Mark %s resolved",
		lead: "Use this when the effect was made good by hand: the dead letters are kept, with your reason, and never replayed. Nothing changes until you confirm."}
)

// closeForm is a discard or resolve as a form posts it: the selection (the
// repeated "id" field; the path names a single one), the version the
// person saw (single), the reason, the list to go back to, and whether they
// confirmed (the confirmation page, or app.js's dialog); a close by
// filter's confirmation also carries the token under which the session
// keeps what the filter left out (closeLeftOutKey).
type closeForm struct {
	selectionForm
	Version   string
	Reason    string
	ReturnTo  string
	Confirmed bool
	LeftOut   string
}

func readCloseForm(form url.Values) closeForm {
	return closeForm{selectionForm: readSelection(form), Version: form.Get("version"), Reason: strings.TrimSpace(form.Get("reason")),
		ReturnTo: form.Get("return_to"), Confirmed: form.Get(views.ConfirmedField) == "1", LeftOut: form.Get(leftOutField)}
}

// Validate returns the version (0: none sent, or one that is no version)
// and a message per bad field: "reason", and "" for a version that is no
// version (versions count from 1): sent, it is the version the person saw,
// and read as none it would close the dead letter whatever changed since.
func (f closeForm) Validate() (int32, map[string]string) {
	errs := map[string]string{}
	var version int64
	if f.Version != "" {
		v, err := strconv.ParseInt(f.Version, 10, 32)
		if err != nil || v < 1 {
			errs[""] = "The form's version of the dead letter is not a version, so what you saw could not be checked: nothing changed. " +
				"Confirm to close it as shown here, or open it again."
		} else {
			version = v
		}
	}
	switch {
	case f.Reason == "":
		errs["reason"] = "Say why: the reason is kept with each dead letter and in the audit log."
	case len(f.Reason) > dlq.MaxCloseReason:
		errs["reason"] = fmt.Sprintf("At most %s bytes: the audit log keeps no more of a reason.", views.Count(dlq.MaxCloseReason))
	}
	if len(errs) == 0 {
		return int32(version), nil
	}
	return int32(version), errs
}

func (s *Server) deadLetterDiscard(c echo.Context) error { return s.closeOne(c, discardKind) }
func (s *Server) deadLetterResolve(c echo.Context) error { return s.closeOne(c, resolveKind) }

// closeOne discards or resolves the dead letter of the :id parameter, at
// the version the person saw, once they confirmed it with a reason.
func (s *Server) closeOne(c echo.Context, k closeKind) error {
	id, ok := deadLetterID(c)
	if !ok {
		return quarantine.Errorf(quarantine.ENOTFOUND, "There is no such dead letter.")
	}
	form, err := c.FormParams()
	if err != nil {
		return quarantine.Errorf(quarantine.EINVALID, "The form could not be read.")
	}
	f := readCloseForm(form)
	back := deadLetterURL(id)
	return s.closeSelection(c, k, []int64{id}, f, c.Request().URL.Path, back)
}

// deadLetterDiscardBulk discards a selection; deadLetterResolveBulk marks
// one resolved by hand. Each has its own route and permission.
func (s *Server) deadLetterDiscardBulk(c echo.Context) error { return s.closeBulk(c, discardKind) }
func (s *Server) deadLetterResolveBulk(c echo.Context) error { return s.closeBulk(c, resolveKind) }

// closeBulk discards or resolves a selection (at most dlq.MaxBulkClose),
// all or nothing, in the tenants where the person may do it.
func (s *Server) closeBulk(c echo.Context, k closeKind) error {
	form, err := c.FormParams()
	if err != nil {
		return quarantine.Errorf(quarantine.EINVALID, "The form could not be read.")
	}
	f := readCloseForm(form)
	ids, err := f.selectionForm.Validate()
	if err != nil {
		return err
	}
	return s.closeSelection(c, k, ids, f, c.Request().URL.Path, listReturn(f.ReturnTo))
}

// closeSelection closes ids once the person confirmed with a reason, then
// goes back; until then it shows the confirmation page (422 with the
// reason's message at its field when it is missing), which keeps the
// selection. The confirmation of a selection (the bulk routes) offers
// only what the close will take and names what it leaves out and why (a
// replay request holding them); a confirmed selection refused because
// some of it is not open (a conflict: nothing changed) comes back as that
// confirmation, with the reason typed and what changed (409). A selection
// with nothing in it goes back with a message; a conflict on one dead
// letter's own route is answered as a conflict too (closeOneConflict).
func (s *Server) closeSelection(c echo.Context, k closeKind, ids []int64, f closeForm, action, back string) error {
	ctx := c.Request().Context()
	u := userOf(c)
	scope := s.tenantsWith(ctx, u, authz.ObjDeadLetter, k.act)
	selected := len(ids)
	ids, refused, err := s.inScope(c, ids, scope, k.path)
	if err != nil {
		return err
	}
	// Those of the selection that are no dead letter the person may read
	// (removed by retention since the list was drawn, or out of their
	// tenants now): said in the message of a close done.
	gone := selected - len(ids) - refused.Len()
	if len(ids) == 0 && c.Param("id") != "" {
		// The route's locator let through a dead letter the person may
		// read: where they may not close it, they are told so (403), as
		// on the dead letter's other actions (payload, fix).
		for key := range refused {
			return s.deny(c, key.Tenant, authz.ObjDeadLetter+":"+k.act, "dead letter "+c.Param("id"))
		}
		return s.notFoundDenied(c, "", deadLetterAuditType, c.Param("id"))
	}
	if len(ids) == 0 && refused.Len() == 0 {
		s.flashError(c, "Select at least one dead letter first.")
		return c.Redirect(http.StatusSeeOther, back)
	}
	version, errs := f.Validate()
	// A selection (not one dead letter's route) is confirmed as what the
	// close will take of it; over the bound, Close refuses it whole.
	split := c.Param("id") == "" && len(ids) <= dlq.MaxBulkClose
	// What the filter the selection came from left out (a close by filter;
	// nil otherwise), which its form's ids cannot say: said again on the
	// page a refused close renders, and in the flash of one done.
	var kept *views.LeftOut
	if c.Param("id") == "" && f.LeftOut != "" {
		kept = s.leftOutOf(c, sessionCloseLeftOut, closeLeftOutKey(k, f.LeftOut))
	}
	status := http.StatusOK
	if len(ids) == 0 || (errs == nil && f.Confirmed) {
		// Nothing the person may close: refused (and audited) at once.
		n, err := s.deps.DeadLetters.Close(ctx, dlq.CloseInput{
			IDs: ids, Version: version, To: k.to, Reason: f.Reason, Tenants: scope.Tenants, All: scope.All, Refused: refused,
		}, u.Actor, authz.RequestMeta(c))
		switch quarantine.ErrorCode(err) {
		case "":
			msg := fmt.Sprintf("%s %s.", countNoun(n, "dead letter", "dead letters"), k.done)
			if refused.Len() > 0 {
				msg += fmt.Sprintf(" %s left out: you may not %s them where they are.", countNoun(refused.Len(), "selected dead letter", "selected dead letters"), k.path)
			}
			if gone > 0 {
				msg += fmt.Sprintf(" %s not found (no longer there, or not yours to read): left out.", countNoun(gone, "selected dead letter was", "selected dead letters were"))
			}
			if kept != nil {
				if more := leftOutSentence(kept); more != "" {
					msg += " " + more
				}
				s.forgetLeftOut(ctx, sessionCloseLeftOut, closeLeftOutKey(k, f.LeftOut)) // done: nothing more to say of it
			}
			s.flash(c, msg)
			return c.Redirect(http.StatusSeeOther, back)
		case quarantine.ENOTFOUND:
			return s.notFoundDenied(c, "", deadLetterAuditType, c.Param("id"))
		case quarantine.ECONFLICT, quarantine.EINVALID, quarantine.EFORBIDDEN:
			if quarantine.ErrorCode(err) == quarantine.ECONFLICT && c.Param("id") != "" && len(ids) == 1 {
				return s.closeOneConflict(c, k, ids[0], scope, action, back, f, quarantine.ErrorMessage(err))
			}
			if quarantine.ErrorCode(err) != quarantine.ECONFLICT || !split || len(ids) == 0 {
				s.flashError(c, "Nothing changed: "+quarantine.ErrorMessage(err)+".")
				return c.Redirect(http.StatusSeeOther, back)
			}
			// A selection confirmed and refused whole: its confirmation
			// again, of what the close takes now, with the reason typed
			// and what changed named.
			status = http.StatusConflict
		default:
			return err
		}
	}
	if errs != nil && status == http.StatusOK {
		status = http.StatusUnprocessableEntity
	}
	var left *views.LeftOut
	if split {
		confirmed := len(ids)
		if ids, left, err = s.splitClosable(c, ids, scope, k.path); err != nil {
			return err
		}
		if status == http.StatusConflict {
			errs = map[string]string{"": refusedCloseText(k, confirmed, len(ids), left)}
		}
		if len(ids) == 0 {
			// Nothing the close would take: the page says why, and offers
			// no button.
			status = http.StatusConflict
		}
	}
	fields := []views.Hidden{{Name: "return_to", Value: f.ReturnTo}}
	if kept != nil {
		left = withKept(*kept, left, len(ids))
		fields = append(fields, views.Hidden{Name: leftOutField, Value: f.LeftOut})
	}
	switch {
	case version != 0:
		fields = append(fields, views.Hidden{Name: "version", Value: strconv.Itoa(int(version))})
	case f.Version != "" && c.Param("id") != "" && len(ids) == 1:
		// A version that is none: the form again at the version the dead
		// letter has now, as a conflict shows it (closeOneConflict), to
		// confirm what this page shows. The version alone is read: the
		// page lists the dead letter as the list does (renderCloseConfirm).
		v, err := s.deps.DeadLetters.VersionOf(ctx, ids[0])
		if err != nil {
			return err
		}
		fields = append(fields, views.Hidden{Name: "version", Value: strconv.FormatInt(int64(v), 10)})
	}
	if c.Param("id") == "" {
		for _, id := range ids {
			fields = append(fields, views.Hidden{Name: "id", Value: strconv.FormatInt(id, 10)})
		}
	}
	return s.renderCloseConfirm(c, k, ids, scope, action, back, f.Reason, fields, errs, status, left)
}

// renderCloseConfirm writes the confirmation page of closing ids: the
// first of them, what was left out of the choice and why (left, nil:
// nothing), the reason field and the form that closes them; with no ids,
// no button.
func (s *Server) renderCloseConfirm(c echo.Context, k closeKind, ids []int64, scope authz.Scope, action, back, reason string,
	fields []views.Hidden, errs map[string]string, status int, left *views.LeftOut) error {
	items, err := s.deps.DeadLetters.ItemsByID(c.Request().Context(), ids, scope.Tenants, scope.All, maxConfirmShown)
	if err != nil {
		return err
	}
	what := countNoun(len(ids), "dead letter", "dead letters")
	m := views.ConfirmModel{
		Title: fmt.Sprintf(k.title, what), Lead: k.lead, Action: action, Fields: fields, More: len(ids) - len(items),
		Reason: reason, ReasonLabel: "Reason", ReasonRequired: true, Errors: errs,
		Button: fmt.Sprintf(k.button, what), Danger: k.to == dlq.StatusDiscarded, BackURL: back, LeftOut: left,
	}
	if len(ids) == 0 {
		m.Title, m.Button = fmt.Sprintf("Nothing to %s", k.path), ""
	}
	for _, it := range items {
		m.Items = append(m.Items, views.ConfirmItem{URL: deadLetterURL(it.ID), Tenant: it.Tenant, ItemType: it.ItemType, MsgID: it.MsgID,
			Error: it.Error, Status: string(it.Status)})
	}
	return s.render(c, status, views.Confirm(s.page(c, m.Title, "deadletters"), m))
}

// refusedCloseText says why a confirmed close of confirmed dead letters
// changed nothing, now that keep of them can be closed and left says why
// the others cannot.
func refusedCloseText(k closeKind, confirmed, keep int, left *views.LeftOut) string {
	switch {
	case left == nil:
		return "Nothing changed: the selection changed while you confirmed it. Check it and confirm again."
	case keep == 0:
		return fmt.Sprintf("Nothing changed: none of the %s you confirmed can be %s now; why is below.",
			countNoun(confirmed, "dead letter", "dead letters"), k.done)
	}
	others := "the other one"
	if keep > 1 {
		others = "the other " + views.Count(int64(keep))
	}
	return fmt.Sprintf("Nothing changed: %s of the %s you confirmed cannot be %s now; why is below. Confirm again to %s %s.",
		views.Count(int64(left.N)), countNoun(confirmed, "dead letter", "dead letters"), k.done, k.path, others)
}

// maxConfirmShown is how many dead letters a confirmation page lists.
const maxConfirmShown = 20

// inScope keeps the ids of dead letters in scope, in their order. Those
// the person may see but not act on (verb: "discard") are returned as
// refused, for the action to audit with itself; the route's locator
// audited those they may not see.
func (s *Server) inScope(c echo.Context, ids []int64, scope authz.Scope, verb string) ([]int64, dlq.RefusedIDs, error) {
	refused := dlq.RefusedIDs{}
	if len(ids) == 0 {
		return nil, refused, nil
	}
	tenants, err := s.deps.DeadLetters.TenantsOf(c.Request().Context(), ids)
	if err != nil {
		return nil, nil, err
	}
	u := userOf(c)
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		t, ok := tenants[id]
		switch {
		case !ok:
		case scope.All || scope.Has(t):
			out = append(out, id)
		case s.deps.Access.Can(u, t, authz.ObjDeadLetter, authz.ActRead):
			refused.Add(id, t, fmt.Sprintf("may not %s in %s", verb, t))
		}
	}
	return out, refused, nil
}

// listReturn is the list page a bulk form came from, or the list. Its path
// is the list's, the groups page's (a group's action), or a dead letter's
// page, as a browser resolves it (localReturn: a path with dot segments,
// "/deadletters/../audit/export.csv", is not taken, whatever its prefix),
// nor another path under the list (a payload's download, audited as one:
// a Back link is no download).
func listReturn(returnTo string) string {
	r, u, ok := localReturn(returnTo)
	if !ok {
		return views.PathDeadLetters
	}
	if u.Path == views.PathDeadLetters || u.Path == views.PathGroups {
		return r
	}
	if id, under := strings.CutPrefix(u.Path, views.PathDeadLetters+"/"); under {
		if _, ok := canonicalID(id); ok {
			return r
		}
	}
	return views.PathDeadLetters
}

// countNoun is "1 dead letter", "3 dead letters", "1,204 dead letters".
func countNoun(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return views.Count(int64(n)) + " " + many
}
