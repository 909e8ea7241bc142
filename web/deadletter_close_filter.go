package web

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/views"
)

// closable are the statuses a discard or resolve takes (dlq.Close).
var closable = []dlq.Status{dlq.StatusQuarantined, dlq.StatusReplayFailed}

func (s *Server) deadLetterDiscardFilter(c echo.Context) error { return s.closeFilter(c, discardKind) }
func (s *Server) deadLetterResolveFilter(c echo.Context) error { return s.closeFilter(c, resolveKind) }

// closeFilter freezes what a list filter (an error group, "all matching")
// selects now, of what is open, into a set of at most dlq.MaxBulkClose and
// shows it for confirmation: the confirmation closes that set, and dead
// letters that arrive later are never added.
func (s *Server) closeFilter(c echo.Context, k closeKind) error {
	ctx := c.Request().Context()
	u := userOf(c)
	f, err := bulkFilter(c.QueryParams(), s.deadLetterTenants(ctx, u, k.act))
	if err != nil {
		return err
	}
	back := views.PathDeadLetters + encodeQuery(without(c.QueryParams(), "before", "after", "count"))
	f.Statuses = openOf(f.Statuses)
	var ids []int64
	if len(f.Statuses) > 0 {
		if ids, err = replay.MatchingIDs(ctx, s.deps.DeadLetters, f, dlq.MaxBulkClose); err != nil {
			return err
		}
	}
	if len(ids) == 0 {
		s.flashError(c, "The filter selects no open dead letter: nothing to "+k.path+".")
		return c.Redirect(http.StatusSeeOther, back)
	}
	fields := []views.Hidden{{Name: "return_to", Value: back}}
	for _, id := range ids {
		fields = append(fields, views.Hidden{Name: "id", Value: strconv.FormatInt(id, 10)})
	}
	k.lead = "These are the open dead letters the filter selects now; dead letters that arrive later are not added. " + k.lead
	scope := s.tenantsWith(ctx, u, authz.ObjDeadLetter, k.act)
	return s.renderCloseConfirm(c, k, ids, scope, "/deadletters/"+k.path, back, c.FormValue("reason"), fields, nil, http.StatusOK)
}

// openOf keeps the statuses of a filter that a close takes (all of them
// when the filter names none).
func openOf(statuses []dlq.Status) []dlq.Status {
	if len(statuses) == 0 {
		return closable
	}
	return slices.DeleteFunc(slices.Clone(statuses), func(st dlq.Status) bool { return !slices.Contains(closable, st) })
}
