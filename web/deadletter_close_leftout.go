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

// splitClosable keeps, of ids (at most dlq.MaxBulkClose), those a close
// in scope takes as they stand now, in order; the others are left out,
// grouped by the tenant where the person may read them but not do verb,
// by the replay request that holds them (which may still send them) or
// by their status, for the confirmation to name. left is nil when
// nothing is left out. verb is the action ("discard").
func (s *Server) splitClosable(c echo.Context, ids []int64, scope authz.Scope, verb string) (keep []int64, left *views.LeftOut, err error) {
	ctx := c.Request().Context()
	u := userOf(c)
	// The states are read where the person may close or read: a dead
	// letter they may only read is named with its tenant, not as "not
	// yours to act on" (what those they may not read stay).
	read := s.tenantsWith(ctx, u, authz.ObjDeadLetter, authz.ActRead)
	tenants := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(scope.Tenants), read.Tenants...))))
	states, err := s.deps.DeadLetters.CloseStates(ctx, ids, tenants, scope.All || read.All)
	if err != nil {
		return nil, nil, err
	}
	type why struct {
		tenant  string
		request int64
		status  dlq.Status
	}
	groups := map[why]*views.LeftOutGroup{}
	var order []why
	for _, id := range ids {
		st, ok := states[id]
		mine := ok && scope.Has(st.Tenant)
		if mine && st.Closable() {
			keep = append(keep, id)
			continue
		}
		var w why
		switch {
		case ok && !mine:
			w.tenant = st.Tenant // whatever its state: the close may not take it
		case st.HeldBy != 0:
			w.request = st.HeldBy
		default:
			w.status = st.Status // "" when it is no longer there
		}
		g := groups[w]
		if g == nil {
			g = &views.LeftOutGroup{RequestID: w.request, Tenant: w.tenant, Status: string(w.status)}
			if w.request != 0 {
				g.RequestStatus = st.HeldStatus
				g.FreedBy = replaypolicy.HeldFreedBy(st.HeldBy, st.HeldStatus, st.Tenant)
			}
			if w.request != 0 && s.deps.Access.Can(u, st.Tenant, authz.ObjDeadLetter, authz.ActRead) {
				g.RequestURL = fmt.Sprintf("/replay/requests/%d", st.HeldBy)
			}
			groups[w] = g
			order = append(order, w)
		}
		g.N++
		if ok && len(g.Items) < leftOutNamed {
			// Its tenant, never shown, judges it when the session's copy
			// is shown again (readLeftOut).
			g.Items = append(g.Items, views.ConfirmItem{URL: deadLetterURL(id), Tenant: st.Tenant, MsgID: st.MsgID})
		}
	}
	if len(order) == 0 {
		return keep, nil, nil
	}
	// The requests that hold some first, then the tenants and what is not
	// open.
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
