package web

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/views"
)

// maxPayloadEdit bounds an edited payload: the largest the edit forms hold.
const maxPayloadEdit = replay.MaxEditablePayload

// typedEditKey keeps, in the echo context, the payloadForm of an edit the
// page is rendered again for (typedEdit).
const typedEditKey = "replay.typedEdit"

// typedEdit is the payload form sent that the page now rendered refuses,
// or the zero form.
func typedEdit(c echo.Context) payloadForm {
	f, _ := c.Get(typedEditKey).(payloadForm)
	return f
}

// payloadForm is one item's new payload and why it changes; Undo: the
// "Undo edit" button was pressed (the payload received goes back, and the
// typed payload is not read).
type payloadForm struct {
	Item    string // the :dl parameter
	Payload string // bytes, kept as sent but for line breaks (LineBreaks): a payload need not be text
	Reason  string
	Undo    bool
	// LineBreaks is how the payload the form showed breaks its lines
	// (views.LineBreaksOf: "crlf" or "lf"): a browser sends a textarea's
	// line breaks as CRLF whatever they were, so with "lf" each CRLF sent
	// is a LF again. A form without it (not the console's) is kept as sent.
	LineBreaks string
	text       map[string]string // text that cannot be stored, by field (formText)
}

// Validate returns the item and the edit, or an error: not found for an
// item that is not an id, invalid for a payload over maxPayloadEdit (the
// reason is the replay rules' to require).
func (f payloadForm) Validate() (int64, replay.PayloadEdit, error) {
	dl, ok := canonicalID(f.Item)
	if !ok {
		return 0, replay.PayloadEdit{}, quarantine.Errorf(quarantine.ENOTFOUND, "There is no such item.")
	}
	if msg := f.text["reason"]; msg != "" {
		return 0, replay.PayloadEdit{}, quarantine.Errorf(quarantine.EINVALID, "The reason: %s", msg)
	}
	if f.Undo {
		return dl, replay.PayloadEdit{Undo: true, Reason: strings.TrimSpace(f.Reason)}, nil
	}
	if f.LineBreaks == views.LineBreaksLF {
		f.Payload = lfLines(f.Payload)
	}
	if len(f.Payload) > maxPayloadEdit {
		return 0, replay.PayloadEdit{}, quarantine.Errorf(quarantine.EINVALID,
			"A payload edited here may be at most %d KiB: fix a bigger one at its producer and publish it again.", maxPayloadEdit>>10)
	}
	return dl, replay.PayloadEdit{Payload: []byte(f.Payload), Reason: strings.TrimSpace(f.Reason)}, nil
}

// replayEditPayload replaces one item's payload of the requester's own
// draft or request before approval, with a reason: a new intent, the
// original message id, and one approver needed whatever the class; or
// undoes its edit (the "Undo edit" button, or the payload received typed
// back), saying what the item comes to without it. Anyone else is refused
// by the replay rules (audited). A draft goes back to its confirm page, a
// request to its page.
func (s *Server) replayEditPayload(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	if err := s.mayOnClass(c, req, authz.ActRequest); err != nil {
		return err
	}
	t, err := readFormText(c)
	if err != nil {
		return err
	}
	form := payloadForm{Item: c.Param("dl"), Payload: c.FormValue("payload"), Reason: t.raw("reason"), Undo: t.raw("undo") != "",
		LineBreaks: c.FormValue("line_breaks")}
	form.text = t.Errors()
	dl, edit, err := form.Validate()
	var change replay.PayloadChange
	if err == nil {
		change, err = s.deps.Replays.ChangePayload(c.Request().Context(), req.ID, dl, userOf(c).Actor, edit, authz.RequestMeta(c))
	}
	draft := req.Status == replay.StatusDraft
	if err != nil {
		c.Set(typedEditKey, form) // the page that comes back shows the edit as typed
	}
	switch code := quarantine.ErrorCode(err); {
	case err == nil:
	case draft && (code == quarantine.EINVALID || code == quarantine.ECONFLICT):
		// The confirm page comes back with its request form as typed.
		// A refused edit changed nothing: every confirmation typed still
		// confirms what it did, and is kept (it was emptied without a
		// word). A conflict is a change someone else made, after which a
		// phrase may confirm another intent: those are emptied.
		var unchanged *replay.Selection
		if code == quarantine.EINVALID {
			sel, serr := s.selection(c, req.Batch)
			if serr != nil {
				return serr
			}
			unchanged = &sel
		}
		return s.renderConfirm(c, req.Batch, sentFromConfirm(c), unchanged,
			map[string]string{"payload-" + c.Param("dl"): sentence(quarantine.ErrorMessage(err))}, errorStatus(err))
	default:
		return s.requestFormError(c, err, "payload")
	}
	if !draft {
		s.flash(c, editFlash(change, false))
		return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
	}
	// The confirm page keeps its request form as typed (the reason, note,
	// rates and confirmations), in the session (keepTyped: never in its
	// address), and the list it came with; a text too long to keep is said
	// to be gone, not dropped unsaid. The edit made a new intent of this
	// request, and a typed confirmation confirms one intent
	// (keptConfirmations): its own is asked again.
	typed := sentFromConfirm(c)
	msg := editFlash(change, true)
	if typed.Confirmations[req.ID] != "" {
		delete(typed.Confirmations, req.ID)
		msg += " The edit changed what this request's confirmation confirms: type it again."
	}
	switch {
	case typed.Reason != carriedReason(typed.Reason):
		s.flashInfo(c, msg+" The reason you typed for the replay is too long to keep across the edit: type or paste it again.")
	case typed.Note != carriedReason(typed.Note):
		s.flashInfo(c, msg+" The reconciliation note you typed is too long to keep across the edit: type or paste it again.")
	default:
		s.flash(c, msg)
	}
	s.keepTyped(c.Request().Context(), req.Batch, typed)
	return c.Redirect(http.StatusSeeOther, confirmPage(req.Batch, c.FormValue("back")))
}

// editFlash says what a payload change did: an edit needs one approver
// who sees it; an edit undone sends the payload received again, and the
// rules may leave the item out without it (in a draft; an item left out
// before stays out, in a request waiting for approval), or need no
// approval of the request any more (approved, and its items handed to the
// workers). Approvals that stop counting are only said of a request that
// may have had some (not a draft).
func editFlash(change replay.PayloadChange, draft bool) string {
	switch {
	case change.Approved:
		return "Edit undone: the item sends the payload received again. Without the edit the request needs no approval, so it is approved and runs: " +
			"its items went to the replay workers, which publish them."
	case change.LeftOut != "" && draft:
		return "Edit undone: the item holds the payload received again, and without the edit it is left out: " + sentence(classRead(change.LeftOut))
	case change.LeftOut != "":
		return "Edit undone: the item stays left out and sends nothing, as before: " + sentence(classRead(change.LeftOut)) +
			" Approvals given before no longer count."
	case change.Undone && draft:
		return "Edit undone: the item sends the payload received again."
	case change.Undone:
		return "Edit undone: the item sends the payload received again. Approvals given before no longer count."
	}
	return "Payload saved: the request now needs one approver who sees the change."
}

// sentence is msg as a field's error reads: its first letter upper case,
// a full stop at its end. The replay rules' reasons are clauses ("say why
// the payload is changed: …"), kept so in the audit log and the service's
// errors; the field beside which one is shown starts a sentence with it.
func sentence(msg string) string {
	r, n := utf8.DecodeRuneInString(msg)
	if n == 0 {
		return msg
	}
	msg = string(unicode.ToUpper(r)) + msg[n:]
	if !strings.HasSuffix(msg, ".") && !strings.HasSuffix(msg, "?") && !strings.HasSuffix(msg, "!") {
		msg += "."
	}
	return msg
}
