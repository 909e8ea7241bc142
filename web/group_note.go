package web

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// noteForm is a note about a group and a link to its ticket (either may
// be empty). Console names the hosts of the console itself (consoleHosts),
// where a ticket link may not lead.
type noteForm struct {
	Note, Ticket string
	Console      []string
}

// Validate returns the note and the link, with a message per bad field.
func (f noteForm) Validate() (note, ticket string, errs map[string]string) {
	note, ticket = lfLines(strings.TrimSpace(f.Note)), strings.TrimSpace(f.Ticket) // a note keeps LF
	errs = map[string]string{}
	switch {
	case len(note) > dlq.MaxGroupNote:
		errs["note"] = overBytes("note", note, dlq.MaxGroupNote)
	case !dlq.StorableText(note):
		errs["note"] = dlq.UnstorableTextMessage
	}
	if ticket != "" {
		if msg := ticketProblem(ticket, f.Console); msg != "" {
			errs["ticket"] = msg
		}
	}
	if len(errs) == 0 {
		return note, ticket, nil
	}
	return note, ticket, errs
}

// overBytes says that text s, the what, is over max bytes, as the table
// counts (group_triage_bounds_check counts octets): in characters when
// each is one byte, else in bytes, with why a shorter text in characters
// is over. The inputs' maxlength (max, in UTF-16 code units, never more
// than bytes) stops only what is too long by any count.
func overBytes(what, s string, max int) string {
	n, chars := len(s), utf8.RuneCountInString(s)
	if chars == n {
		return fmt.Sprintf("This %s is %s characters; %s at most.", what, views.Count(int64(n)), views.Count(int64(max)))
	}
	return fmt.Sprintf("This %s is %s bytes; %s at most. It has %s characters, and a character outside plain ASCII takes 2 to 4 bytes.",
		what, views.Count(int64(n)), views.Count(int64(max)), views.Count(int64(chars)))
}

// groupNote records a note and a ticket link for an error group in a
// tenant.
func (s *Server) groupNote(c echo.Context) error {
	g, err := s.groupRef(c)
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	f := noteForm{Note: form.Get("note"), Ticket: form.Get("ticket"), Console: s.consoleHosts(c.Request())}
	_, noteWas, _ := edited(form, "note")
	_, ticketWas, _ := edited(form, "ticket")
	note, ticket, errs := f.Validate()
	status := http.StatusUnprocessableEntity
	if errs == nil {
		// note_was and ticket_was, when sent, are what the form showed: a
		// colleague's change since then is a conflict (the form again, 409,
		// standing on the group as it is now), not overwritten blind.
		ch := dlq.GroupChange{Note: &note, Ticket: &ticket, NoteWas: noteWas, TicketWas: ticketWas}
		err = s.deps.DeadLetters.TriageGroup(c.Request().Context(), g, ch, userOf(c).Actor, authz.RequestMeta(c))
		if errs = movedParts(err, form); errs == nil {
			return s.groupChanged(c, err, "Note saved in "+g.Tenant+".")
		}
		status = http.StatusConflict
	}
	return s.renderGroupForm(c, g, status, "Note on the group", "Save note", drawnFields(form, "note_was", "ticket_was"),
		views.FormControl{Input: &views.Input{Name: "note", Label: "Note", Value: f.Note, Error: errs["note"], Rows: 3}},
		views.FormControl{Input: &views.Input{Name: "ticket", Label: "Ticket link", Type: "url", Value: f.Ticket, Error: errs["ticket"]}})
}
