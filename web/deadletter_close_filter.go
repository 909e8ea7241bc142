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
	f, err := bulkFilter(c.QueryParams(), s.deadLetterTenants(ctx, u, k.act), authz.Now(ctx))
	if err != nil {
		return err
	}
	back := views.PathDeadLetters + encodeQuery(listFilter(c.QueryParams()))
	scope := s.tenantsWith(ctx, u, authz.ObjDeadLetter, k.act)
	left, err := s.filterLeftOut(c, f, scope, k.path)
	if err != nil {
		return err
	}
	f.Statuses = openOf(f.Statuses)
	var ids []int64
	if len(f.Statuses) > 0 {
		if ids, err = replay.MatchingIDs(ctx, s.deps.DeadLetters, f, dlq.MaxBulkClose); err != nil {
			return err
		}
	}
	if len(ids) == 0 && left == nil {
		s.flashError(c, "The filter selects no open dead letter: nothing to "+k.path+".")
		return c.Redirect(http.StatusSeeOther, back)
	}
	fields := []views.Hidden{{Name: "return_to", Value: back}}
	for _, id := range ids {
		fields = append(fields, views.Hidden{Name: "id", Value: strconv.FormatInt(id, 10)})
	}
	status := http.StatusOK
	if left != nil {
		left.Of += len(ids)
		if len(ids) == 0 {
			status = http.StatusConflict // nothing to confirm: the page says why
		}
	}
	k.lead = "These are the open dead letters the filter selects now; dead letters that arrive later are not added. " + k.lead
	return s.renderCloseConfirm(c, k, ids, scope, "/deadletters/"+k.path, back, c.FormValue("reason"), fields, nil, status, left)
}

// filterLeftOut is what filter f selects now that a close leaves out (those
// not open), by why: the replay request holding them, or their status; at
// most dlq.MaxBulkClose of them are read (AtLeast past that). Nil when
// the filter selects nothing that is not open.
func (s *Server) filterLeftOut(c echo.Context, f dlq.ListFilter, scope authz.Scope, verb string) (*views.LeftOut, error) {
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = dlq.AllStatuses
	}
	f.Statuses = slices.DeleteFunc(slices.Clone(statuses), func(st dlq.Status) bool { return slices.Contains(closable, st) })
	if len(f.Statuses) == 0 {
		return nil, nil
	}
	ids, err := s.deps.DeadLetters.MatchingIDs(c.Request().Context(), f, dlq.MaxBulkClose+1)
	if err != nil {
		return nil, err
	}
	more := len(ids) > dlq.MaxBulkClose
	if more {
		ids = ids[:dlq.MaxBulkClose]
	}
	_, left, err := s.splitClosable(c, ids, scope, verb)
	if left != nil {
		left.Chosen, left.AtLeast, left.Of = "matching", more, left.N
	}
	return left, err
}

// openOf keeps the statuses of a filter that a close takes (all of them
// when the filter names none).
func openOf(statuses []dlq.Status) []dlq.Status {
	if len(statuses) == 0 {
		return closable
	}
	return slices.DeleteFunc(slices.Clone(statuses), func(st dlq.Status) bool { return !slices.Contains(closable, st) })
}
