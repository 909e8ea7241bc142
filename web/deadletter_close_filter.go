package web

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// closable are the statuses a discard or resolve takes (dlq.Close).
var closable = []dlq.Status{dlq.StatusQuarantined, dlq.StatusReplayFailed}

func (s *Server) deadLetterDiscardFilter(c echo.Context) error { return s.closeFilter(c, discardKind) }
func (s *Server) deadLetterResolveFilter(c echo.Context) error { return s.closeFilter(c, resolveKind) }

// closeFilter freezes what a list filter (an error group, "all matching")
// selects now, of what is open, into a set of at most dlq.MaxBulkClose and
// shows it for confirmation: the confirmation closes that set, and dead
// letters that arrive later are never added. The filter is read over the
// tenants where the person may read, as the list that offered it counts
// "all matching": those it selects in a tenant where they may not close
// are named with their tenant among what the close leaves out.
func (s *Server) closeFilter(c echo.Context, k closeKind) error {
	ctx := c.Request().Context()
	u := userOf(c)
	f, err := bulkFilter(c.QueryParams(), s.deadLetterTenants(ctx, u, authz.ActRead), authz.Now(ctx))
	if err != nil {
		return err
	}
	back := actionReturn(c)
	scope := s.tenantsWith(ctx, u, authz.ObjDeadLetter, k.act)
	left, err := s.filterLeftOut(c, f, scope, k.path)
	if err != nil {
		return err
	}
	f.Tenants, _ = splitTenants(f.Tenants, scope)
	f.Statuses = openOf(f.Statuses)
	var ids []int64
	inParts := false
	if len(f.Statuses) > 0 && len(f.Tenants) > 0 {
		if ids, err = s.deps.DeadLetters.MatchingIDs(ctx, f, dlq.MaxBulkClose+1); err != nil {
			return err
		}
		// A flood selects more than one close takes: this one takes the
		// newest dlq.MaxBulkClose, and the page says to come back for the
		// rest (refusing would leave the on-call narrowing a filter by
		// hand into thousand-letter slices).
		if inParts = len(ids) > dlq.MaxBulkClose; inParts {
			ids = ids[:dlq.MaxBulkClose]
		}
	}
	if len(ids) == 0 && left == nil {
		s.flashError(c, "The filter selects no open dead letter: nothing to "+k.path+".")
		return c.Redirect(http.StatusSeeOther, back)
	}
	if left != nil && inParts {
		// The older open ones past this round are left out of it too,
		// uncounted: "N or more of those matching", here and when the
		// close is confirmed again (the session keeps it so).
		left.AtLeast = true
	}
	fields := []views.Hidden{{Name: "return_to", Value: back}}
	if left != nil && len(ids) > 0 {
		// The form carries the ids only: what the filter left out is kept
		// in the session for the close to say again (closeSelection).
		token := rand.Text()
		s.keepLeftOut(ctx, sessionCloseLeftOut, closeLeftOutKey(k, token), left)
		fields = append(fields, views.Hidden{Name: leftOutField, Value: token})
	}
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
	if inParts {
		k.lead = fmt.Sprintf("The filter selects more than %s open dead letters, more than one %s takes: this takes the %s newest. When it is done, choose it again from the list for the next ones. ",
			views.Count(dlq.MaxBulkClose), k.path, views.Count(dlq.MaxBulkClose)) + k.lead
	}
	return s.renderCloseConfirm(c, k, ids, scope, "/deadletters/"+k.path, back, c.FormValue("reason"), fields, nil, status, left)
}

// filterLeftOut is what filter f (over the tenants where the person may
// read) selects now that a close in scope leaves out, by why: in scope,
// those not open (the replay request holding them, or their status);
// outside it, all of them (their tenant). Ids only are read, at most
// dlq.MaxBulkClose of each (AtLeast past that); those outside the scope
// cost a statement only when f reaches a tenant outside it. Nil when the
// filter selects nothing the close leaves out. A replay by filter
// (replayFilter) names what it leaves out with it, verb "request
// replays" and scope where the person may request replays: the statuses
// a close takes (closable) are those a new replay takes
// (replay.ReplayableStatuses), so that both count what the list counts.
func (s *Server) filterLeftOut(c echo.Context, f dlq.ListFilter, scope authz.Scope, verb string) (*views.LeftOut, error) {
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = dlq.AllStatuses
	}
	in, out := f, f
	in.Tenants, out.Tenants = splitTenants(f.Tenants, scope)
	in.Statuses = slices.DeleteFunc(slices.Clone(statuses), func(st dlq.Status) bool { return slices.Contains(closable, st) })
	var reads []dlq.ListFilter
	if len(in.Tenants) > 0 && len(in.Statuses) > 0 { // no statuses: any, not none
		reads = append(reads, in)
	}
	if len(out.Tenants) > 0 {
		reads = append(reads, out)
	}
	var ids []int64
	more := false
	for _, g := range reads {
		got, err := s.deps.DeadLetters.MatchingIDs(c.Request().Context(), g, dlq.MaxBulkClose+1)
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	if len(ids) > dlq.MaxBulkClose {
		ids, more = ids[:dlq.MaxBulkClose], true
	}
	if len(ids) == 0 {
		return nil, nil
	}
	_, left, err := s.splitClosable(c, ids, scope, verb)
	if left != nil {
		left.Chosen, left.AtLeast, left.Of = "matching", more, left.N
	}
	return left, err
}

// leftOutField is the field of a close by filter's confirmation that
// names what the session keeps of what its filter left out.
const leftOutField = "left_out"

// closeLeftOutKey is the key under which the session keeps what the close
// (k: a discard or a resolve) by filter of token left out (keepLeftOut):
// a discard's token posted to the resolve route finds nothing.
func closeLeftOutKey(k closeKind, token string) string { return k.path + ":" + token }

// withKept is what a close by filter leaves out when it is confirmed
// again: what its filter left out (kept, which the form's ids do not
// hold), and what of the ids it would close cannot be closed now (now,
// nil: nothing), of offered still closable; a group of both is counted
// once, with the items of both up to leftOutNamed.
func withKept(kept views.LeftOut, now *views.LeftOut, offered int) *views.LeftOut {
	m := kept
	m.Groups = slices.Clone(kept.Groups)
	if now != nil {
		for _, g := range now.Groups {
			i := slices.IndexFunc(m.Groups, func(k views.LeftOutGroup) bool {
				return k.RequestID == g.RequestID && k.Tenant == g.Tenant && k.Status == g.Status
			})
			if i < 0 {
				m.Groups = append(m.Groups, g)
				continue
			}
			k := &m.Groups[i]
			k.N += g.N
			k.Items = append(slices.Clone(k.Items), g.Items...)[:min(len(k.Items)+len(g.Items), leftOutNamed)]
		}
		m.N += now.N
	}
	m.Of = m.N + offered
	return &m
}

// splitTenants splits tenants into those in scope and the others.
func splitTenants(tenants []string, scope authz.Scope) (in, out []string) {
	for _, t := range tenants {
		if scope.Has(t) {
			in = append(in, t)
		} else {
			out = append(out, t)
		}
	}
	return in, out
}

// openOf keeps the statuses of a filter that a close takes (all of them
// when the filter names none).
func openOf(statuses []dlq.Status) []dlq.Status {
	if len(statuses) == 0 {
		return closable
	}
	return slices.DeleteFunc(slices.Clone(statuses), func(st dlq.Status) bool { return !slices.Contains(closable, st) })
}
