package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// triageConflict answers a panel save refused because a field it changed
// was changed meanwhile (moved; nothing was saved) with the form again
// (409): the fields the person changed as they typed them, each one
// changed meanwhile saying what the group holds now and who changed it
// last and when; the fields they left alone as the group holds them now;
// and the *_was fields as the group is now, so that Save again writes what
// they typed over what they have now seen.
func (s *Server) triageConflict(c echo.Context, g dlq.GroupRef, f triageForm, form url.Values, moved *dlq.TriageConflict) error {
	errs := movedParts(moved, form)
	now := moved.Now
	for _, p := range []struct {
		typed   *string
		changed bool
		now     string
	}{{&f.Owner, f.OwnerChanged, now.Owner}, {&f.Note, f.NoteChanged, now.Note}, {&f.Ticket, f.TicketChanged, now.TicketURL}} {
		if !p.changed {
			*p.typed = p.now
		}
	}
	form.Del("snoozed")
	if now.Snoozed {
		form.Set("snoozed", "1")
	}
	return s.renderTriageForm(c, g, f, form, errs, http.StatusConflict)
}

// changedMeanwhile says, at field part ("owner", "note", "ticket") of the
// panel's form, that it was changed since the form was drawn, what it
// holds now, and who changed the group last and when.
func changedMeanwhile(part string, now dlq.GroupTriage) string {
	name, value := map[string]string{"owner": "owner", "note": "note", "ticket": "ticket link"}[part],
		map[string]string{"owner": now.Owner, "note": now.Note, "ticket": now.TicketURL}[part]
	is := "now empty"
	if value != "" {
		is = fmt.Sprintf("now “%s”", value)
	}
	by := ""
	if now.UpdatedBy != "" && !now.UpdatedAt.IsZero() {
		by = fmt.Sprintf(" (the group was last changed by %s at %s)", now.UpdatedBy, views.FormatTime(now.UpdatedAt))
	}
	return fmt.Sprintf("Nothing was saved: the %s was changed since your page showed it. It is %s%s. "+
		"What you typed is kept here: save again to write it over that, or change it first.", name, is, by)
}

// movedParts returns, for err a *dlq.TriageConflict (of the panel's save
// or a one-part form's: the owner's, the note's), the message at each part changed
// meanwhile (changedMeanwhile), and sets form's *_was fields to the group
// as it is now, so that the form drawn again and saved again writes what
// was typed over what the person has now seen. Nil for any other err.
func movedParts(err error, form url.Values) map[string]string {
	moved := (*dlq.TriageConflict)(nil)
	if !errors.As(err, &moved) {
		return nil
	}
	now := moved.Now
	form.Set("owner_was", now.Owner)
	form.Set("note_was", now.Note)
	form.Set("ticket_was", now.TicketURL)
	errs := map[string]string{}
	for _, part := range moved.Parts {
		errs[part] = changedMeanwhile(part, now)
	}
	return errs
}
