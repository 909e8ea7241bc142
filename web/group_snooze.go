package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// snoozeChoices are how long a snooze may last by time.
var snoozeChoices = []views.Option{
	{Value: "1h", Label: "1 hour"}, {Value: "4h", Label: "4 hours"}, {Value: "24h", Label: "24 hours"}, {Value: "168h", Label: "7 days"},
}

// maxSnoozeGrowth bounds "until it grows by N".
const maxSnoozeGrowth = 1_000_000

// snoozeForm is a snooze as typed: for how long, and until how many more
// dead letters arrive (either or both; whichever comes first ends it).
type snoozeForm struct {
	For, Grows string
}

// Validate returns the snooze, with a message per bad field. Its time
// limit is a span, reckoned from the database's clock when it is stored.
func (f snoozeForm) Validate() (dlq.SnoozeInput, map[string]string) {
	errs := map[string]string{}
	var in dlq.SnoozeInput
	if f.For != "" {
		if d, err := time.ParseDuration(f.For); err == nil && hasChoice(snoozeChoices, f.For) {
			in.For = d
		} else {
			errs["for"] = "Choose one of the durations."
		}
	}
	if f.Grows != "" {
		n, err := strconv.ParseInt(f.Grows, 10, 64)
		if err != nil || n < 1 || n > maxSnoozeGrowth {
			errs["grows"] = "A whole number of new dead letters, from 1 to 1,000,000."
		}
		in.GrowBy = n
	}
	if f.For == "" && f.Grows == "" {
		// A snooze needs an end: "no time limit" alone would hide the
		// group until someone remembers to wake it.
		errs["grows"] = "With no time limit, say how many more dead letters end the snooze, or choose a time."
	}
	if len(errs) == 0 {
		return in, nil
	}
	return in, errs
}

// groupSnooze hides an error group in a tenant until a time or until it
// grows by a number of dead letters.
func (s *Server) groupSnooze(c echo.Context) error {
	g, err := s.groupRef(c)
	if err != nil {
		return err
	}
	f := snoozeForm{For: strings.TrimSpace(c.FormValue("for")), Grows: strings.TrimSpace(c.FormValue("grows"))}
	in, errs := f.Validate()
	if errs != nil {
		return s.renderGroupForm(c, g, http.StatusUnprocessableEntity, "Snooze the group", "Snooze", nil,
			views.FormControl{Select: &views.Select{Name: "for", Label: "For", Value: f.For, Options: snoozeChoices, Placeholder: "No time limit (give a count)", Error: errs["for"]}},
			views.FormControl{Input: &views.Input{Name: "grows", Label: "Or until this many more arrive", Type: "number", Value: f.Grows, Error: errs["grows"]}})
	}
	err = s.deps.DeadLetters.SnoozeGroup(c.Request().Context(), g, in, userOf(c).Actor, authz.RequestMeta(c))
	return s.groupChanged(c, err, "Snoozed in "+g.Tenant+".")
}

// groupWake ends a group's snooze in a tenant now.
func (s *Server) groupWake(c echo.Context) error {
	g, err := s.groupRef(c)
	if err != nil {
		return err
	}
	err = s.deps.DeadLetters.WakeGroup(c.Request().Context(), g, userOf(c).Actor, authz.RequestMeta(c))
	return s.groupChanged(c, err, "Woken: the group shows again in "+g.Tenant+".")
}
