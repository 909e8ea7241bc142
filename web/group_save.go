package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// The snooze choices of the panel's one form besides the durations of
// snoozeChoices: leave the snooze as it is (chosen until someone chooses,
// so that Save pressed for a note snoozes nothing), wake the group now,
// or snooze with no time limit (a count then ends it).
const (
	snoozeLeave   = ""
	snoozeWake    = "wake"
	snoozeNoLimit = "none"
)

// triageSnoozeOptions are the panel's snooze choices for a group that is
// snoozed or not: "wake now" only for a snoozed one.
func triageSnoozeOptions(snoozed bool) []views.Option {
	out := []views.Option{{Value: snoozeLeave, Label: "leave as it is"}}
	if snoozed {
		out = append(out, views.Option{Value: snoozeWake, Label: "wake now"})
	}
	for _, o := range snoozeChoices {
		out = append(out, views.Option{Value: o.Value, Label: "for " + o.Label})
	}
	return append(out, views.Option{Value: snoozeNoLimit, Label: "with no time limit (give a count)"})
}

// triageForm is an error group panel's one form as sent: owner, note,
// ticket, and a snooze choice with its count. OwnerChanged, NoteChanged
// and TicketChanged say whether the person changed the owner, the note or
// the ticket from what the form showed (the *_was fields): only what was
// changed is written, so that a field left alone does not undo a change
// someone else made meanwhile. A form without the *_was fields changes
// every text field it sends. OwnerWas, NoteWas and TicketWas are the
// *_was fields as sent (nil: not sent): a changed field is written only
// if the group still holds what the form showed (dlq.GroupChange).
type triageForm struct {
	Owner, Note, Ticket                      string
	OwnerChanged, NoteChanged, TicketChanged bool
	OwnerWas, NoteWas, TicketWas             *string
	Snooze, Grows                            string
	Console                                  []string
}

// readTriageForm reads the panel's form from values.
func readTriageForm(form url.Values, console []string) triageForm {
	f := triageForm{Snooze: strings.TrimSpace(form.Get("for")), Grows: strings.TrimSpace(form.Get("grows")), Console: console}
	f.Owner, f.OwnerWas, f.OwnerChanged = edited(form, "owner")
	f.Note, f.NoteWas, f.NoteChanged = edited(form, "note")
	f.Ticket, f.TicketWas, f.TicketChanged = edited(form, "ticket")
	return f
}

// edited returns field name of form, name_was (nil: not sent) and whether
// the field was changed: sent, and different (trimmed, and its line breaks
// read as LF: a browser sends a form's as CRLF, hidden fields' too) from
// name_was when that was sent too.
func edited(form url.Values, name string) (string, *string, bool) {
	var drawn *string
	if was := form[name+"_was"]; len(was) > 0 {
		drawn = &was[0]
	}
	v, sent := form[name]
	if !sent || len(v) == 0 {
		return "", drawn, false
	}
	return v[0], drawn, drawn == nil || lfLines(strings.TrimSpace(*drawn)) != lfLines(strings.TrimSpace(v[0]))
}

// Validate returns the change the form asks for, with a message per bad
// field; each part is judged as its own form judges it (ownerForm,
// noteForm, snoozeForm).
func (f triageForm) Validate() (dlq.GroupChange, map[string]string) {
	var ch dlq.GroupChange
	errs := map[string]string{}
	if f.OwnerChanged {
		owner, bad := ownerForm{Owner: f.Owner}.Validate()
		ch.Owner, ch.OwnerWas = &owner, f.OwnerWas
		for k, v := range bad {
			errs[k] = v
		}
	}
	if f.NoteChanged || f.TicketChanged {
		// Each is judged only when changed: a ticket saved before a rule
		// it breaks does not stop a note from being saved.
		note, ticket, bad := noteForm{Note: f.Note, Ticket: f.Ticket, Console: f.Console}.Validate()
		if f.NoteChanged {
			ch.Note, ch.NoteWas = &note, f.NoteWas
			if msg, ok := bad["note"]; ok {
				errs["note"] = msg
			}
		}
		if f.TicketChanged {
			ch.Ticket, ch.TicketWas = &ticket, f.TicketWas
			if msg, ok := bad["ticket"]; ok {
				errs["ticket"] = msg
			}
		}
	}
	switch {
	case f.Snooze == snoozeWake && f.Grows != "":
		errs["grows"] = "Waking the group ends its snooze: leave the count empty, or choose how long to snooze."
	case f.Snooze == snoozeWake:
		ch.Wake = true
	case f.Snooze == snoozeLeave && f.Grows == "":
		// The snooze stays as it is.
	default:
		// A count with "leave as it is" adds the count to the snooze the
		// group has now, keeping its time limit (whichever comes first):
		// the time was left as it is. A group not snoozed is snoozed
		// until the count: the person typed it to snooze.
		sf := snoozeForm{For: f.Snooze, Grows: f.Grows}
		if f.Snooze == snoozeNoLimit || f.Snooze == snoozeLeave {
			sf.For = ""
		}
		in, bad := sf.Validate()
		in.KeepUntil = f.Snooze == snoozeLeave
		ch.Snooze = &in
		for k, v := range bad {
			errs[k] = v
		}
	}
	if len(errs) == 0 {
		return ch, nil
	}
	return ch, errs
}

// groupSave writes what an error group panel's form changed in a tenant
// (owner, note and ticket, snooze or wake) at once: all of it or, on a
// mistake or a conflict, none of it, with the form shown again as typed.
// A field changed meanwhile by someone else is such a conflict
// (triageConflict: 409).
func (s *Server) groupSave(c echo.Context) error {
	g, err := s.groupRef(c)
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return quarantine.Errorf(quarantine.EINVALID, "The form could not be read.")
	}
	f := readTriageForm(form, s.consoleHosts(c.Request()))
	ch, errs := f.Validate()
	if errs == nil && ch.Empty() {
		s.flashInfo(c, "Nothing to save in "+g.Tenant+": nothing was changed.")
		return c.Redirect(http.StatusSeeOther, s.groupReturn(c))
	}
	if errs == nil {
		err = s.deps.DeadLetters.TriageGroup(c.Request().Context(), g, ch, userOf(c).Actor, authz.RequestMeta(c))
		if moved := (*dlq.TriageConflict)(nil); errors.As(err, &moved) {
			return s.triageConflict(c, g, f, form, moved)
		}
		if quarantine.ErrorCode(err) != quarantine.ECONFLICT {
			return s.groupChanged(c, err, "Saved in "+g.Tenant+": "+savedParts(ch)+".")
		}
		// The snooze ended meanwhile: nothing was saved; say so at the
		// snooze, keeping what was typed.
		errs = map[string]string{"for": quarantine.ErrorMessage(err) + " Nothing was saved: choose again and save."}
		f.Snooze = snoozeLeave
		form.Del("snoozed")
	}
	return s.renderTriageForm(c, g, f, form, errs, http.StatusUnprocessableEntity)
}

// savedParts names what ch changed: "owner, note, ticket, snooze".
func savedParts(ch dlq.GroupChange) string {
	var parts []string
	if ch.Owner != nil {
		parts = append(parts, "owner")
	}
	if ch.Note != nil {
		parts = append(parts, "note")
	}
	if ch.Ticket != nil {
		parts = append(parts, "ticket")
	}
	switch {
	case ch.Snooze != nil && ch.Snooze.KeepUntil:
		parts = append(parts, "snooze (its time limit kept, if it had one)")
	case ch.Snooze != nil:
		parts = append(parts, "snooze")
	}
	if ch.Wake {
		parts = append(parts, "woken")
	}
	return strings.Join(parts, ", ")
}

// renderTriageForm writes the panel's form again on a page of its own
// (status: 422, or 409 for a conflict) with every field as typed, a
// message at each bad one, and the *_was fields of form.
func (s *Server) renderTriageForm(c echo.Context, g dlq.GroupRef, f triageForm, form url.Values, errs map[string]string, status int) error {
	snoozed := form.Get("snoozed") != "" || f.Snooze == snoozeWake
	return s.renderGroupForm(c, g, status, "Save the group's triage", "Save", drawnFields(form, "owner_was", "note_was", "ticket_was", "snoozed"),
		views.FormControl{Input: &views.Input{Name: "owner", Label: "Owner", Value: f.Owner, Error: errs["owner"]}},
		views.FormControl{Input: &views.Input{Name: "note", Label: "Note", Value: f.Note, Error: errs["note"], Rows: 3}},
		views.FormControl{Input: &views.Input{Name: "ticket", Label: "Ticket link", Type: "url", Value: f.Ticket, Error: errs["ticket"]}},
		views.FormControl{Select: &views.Select{Name: "for", Label: "Snooze", Value: f.Snooze, Options: triageSnoozeOptions(snoozed), Error: errs["for"]}},
		views.FormControl{Input: &views.Input{Name: "grows", Label: "Or until this many more arrive", Type: "number", Value: f.Grows, Error: errs["grows"]}})
}

// drawnFields are the fields names of form, as sent (those sent), as the
// hidden fields of a form written again: what it showed when first drawn
// (the *_was fields), so that the second try is judged against that, not
// against what the group holds now.
func drawnFields(form url.Values, names ...string) []views.Hidden {
	var drawn []views.Hidden
	for _, name := range names {
		if v, ok := form[name]; ok && len(v) > 0 {
			drawn = append(drawn, views.Hidden{Name: name, Value: v[0]})
		}
	}
	return drawn
}
