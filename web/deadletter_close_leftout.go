package web

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// leftOutNamed is how many dead letters of each reason a left-out list
// names (by message id).
const leftOutNamed = 5

// splitClosable keeps, of ids (in scope, at most dlq.MaxBulkClose), those
// a close takes as they stand now, in order; the others are left out,
// grouped by the replay request that holds them (which may still send
// them) or by their status, for the confirmation to name. left is nil
// when nothing is left out. verb is the action ("discard").
func (s *Server) splitClosable(c echo.Context, ids []int64, scope authz.Scope, verb string) (keep []int64, left *views.LeftOut, err error) {
	states, err := s.deps.DeadLetters.CloseStates(c.Request().Context(), ids, scope.Tenants, scope.All)
	if err != nil {
		return nil, nil, err
	}
	u := userOf(c)
	type why struct {
		request int64
		status  dlq.Status
	}
	groups := map[why]*views.LeftOutGroup{}
	var order []why
	for _, id := range ids {
		st, ok := states[id]
		if ok && st.Closable() {
			keep = append(keep, id)
			continue
		}
		w := why{request: st.HeldBy}
		if w.request == 0 {
			w.status = st.Status // "" when it is no longer there
		}
		g := groups[w]
		if g == nil {
			g = &views.LeftOutGroup{RequestID: st.HeldBy, RequestStatus: st.HeldStatus, Status: string(w.status)}
			if st.HeldBy != 0 {
				g.FreedBy = replaypolicy.HeldFreedBy(st.HeldBy, st.HeldStatus, st.Tenant)
			}
			if st.HeldBy != 0 && s.deps.Access.Can(u, st.Tenant, authz.ObjDeadLetter, authz.ActRead) {
				g.RequestURL = fmt.Sprintf("/replay/requests/%d", st.HeldBy)
			}
			groups[w] = g
			order = append(order, w)
		}
		g.N++
		if ok && len(g.Items) < leftOutNamed {
			g.Items = append(g.Items, views.ConfirmItem{URL: deadLetterURL(id), MsgID: st.MsgID})
		}
	}
	if len(order) == 0 {
		return keep, nil, nil
	}
	// The requests that hold some first, then what is not open.
	slices.SortStableFunc(order, func(a, b why) int {
		switch {
		case a.request == 0 && b.request == 0:
			return 0
		case a.request == 0:
			return 1
		case b.request == 0:
			return -1
		}
		return cmp.Compare(a.request, b.request)
	})
	left = &views.LeftOut{Of: len(ids), Chosen: "selected", Verb: verb}
	for _, w := range order {
		left.Groups = append(left.Groups, *groups[w])
		left.N += groups[w].N
	}
	return keep, left, nil
}
