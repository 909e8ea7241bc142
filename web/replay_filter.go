package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
)

// replayFilter replays what a list filter selects (from the list or an
// error group): the filter in the query string is resolved now to an exact
// set of ids, which the confirm page shows; later arrivals are never added.
func (s *Server) replayFilter(c echo.Context) error {
	ctx := c.Request().Context()
	q := c.QueryParams()
	if len(q) == 0 {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "Filter the list first; to replay everything, select it explicitly.")
	}
	tenants := s.deadLetterTenants(ctx, userOf(c), authz.ActRead)
	f, errs := readDeadLetterFilter(q).Validate(tenants)
	if errs != nil {
		var msgs []string
		for field, msg := range errs {
			msgs = append(msgs, field+": "+msg)
		}
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "The filter is not valid: "+strings.Join(msgs, "; "))
	}
	ids, err := s.deps.DeadLetters.MatchingIDs(ctx, f, dlq.MaxSelection)
	if err != nil {
		if msg, ok := replayMessage(err); ok {
			return echo.NewHTTPError(http.StatusUnprocessableEntity, msg)
		}
		return err
	}
	if len(ids) == 0 {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "The filter selects nothing.")
	}
	return s.startReplay(c, ids)
}
