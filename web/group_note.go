package web

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// noteForm is a note about a group and a link to its ticket (either may
// be empty).
type noteForm struct {
	Note, Ticket string
}

// Validate returns the note and the link, with a message per bad field.
func (f noteForm) Validate() (note, ticket string, errs map[string]string) {
	note, ticket = strings.TrimSpace(f.Note), strings.TrimSpace(f.Ticket)
	errs = map[string]string{}
	switch {
	case len(note) > dlq.MaxGroupNote:
		errs["note"] = "At most 2,000 characters."
	case !dlq.StorableText(note):
		errs["note"] = dlq.UnstorableTextMessage
	}
	if ticket != "" && (len(ticket) > dlq.MaxGroupNote || !dlq.StorableText(ticket) || !validTicketURL(ticket)) {
		errs["ticket"] = "A link that starts with https:// (or http://), at most 2,000 characters."
	}
	if len(errs) == 0 {
		return note, ticket, nil
	}
	return note, ticket, errs
}

// groupNote records a note and a ticket link for an error group in a
// tenant.
func (s *Server) groupNote(c echo.Context) error {
	g, err := s.groupRef(c)
	if err != nil {
		return err
	}
	f := noteForm{Note: c.FormValue("note"), Ticket: c.FormValue("ticket")}
	note, ticket, errs := f.Validate()
	if errs != nil {
		return s.renderGroupForm(c, g, "Note on the group", "Save note",
			views.FormControl{Input: &views.Input{Name: "note", Label: "Note", Value: f.Note, Error: errs["note"]}},
			views.FormControl{Input: &views.Input{Name: "ticket", Label: "Ticket link", Type: "url", Value: f.Ticket, Error: errs["ticket"]}})
	}
	err = s.deps.DeadLetters.NoteGroup(c.Request().Context(), g, note, ticket, userOf(c).Actor, authz.RequestMeta(c))
	return s.groupChanged(c, err, "Note saved in "+g.Tenant+".")
}
