package web

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// replayFilter replays what a list filter selects (from the list or an
// error group): the filter in the query string is resolved now to an exact
// set of ids, which the confirm page shows; later arrivals are never added.
func (s *Server) replayFilter(c echo.Context) error {
	ctx := c.Request().Context()
	q := c.QueryParams()
	if len(q) == 0 {
		return quarantine.Errorf(quarantine.EINVALID, "Filter the list first; to replay everything, select it explicitly.")
	}
	tenants := s.deadLetterTenants(ctx, userOf(c), authz.ActRead)
	f, errs := readDeadLetterFilter(q).Validate(tenants)
	if errs != nil {
		var msgs []string
		for field, msg := range errs {
			msgs = append(msgs, field+": "+msg)
		}
		return quarantine.Errorf(quarantine.EINVALID, "The filter is not valid: %s", strings.Join(msgs, "; "))
	}
	ids, err := replay.MatchingIDs(ctx, s.deps.DeadLetters, f, replay.MaxSelection)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return quarantine.Errorf(quarantine.EINVALID, "The filter selects nothing.")
	}
	return s.startReplay(c, ids)
}
