package web

import (
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// groupFix is the form that records a fix from the groups page: for a
// group of one tenant and one item type with a sample, when the viewer may
// record fixes there. It posts to the sample's fix route (which finds the
// tenant, item type and group from the dead letter, never from the form),
// naming the groups page to come back to. A group whose error class a
// fix does not let go (the policy's rule for it is not AfterFix, as the
// replay rules read it: terminated, max_deliveries) is offered none.
func (s *Server) groupFix(c echo.Context, g dlq.Group) *views.FixForm {
	if len(g.Tenants) != 1 || g.ItemTypeCount != 1 || g.SampleID == 0 ||
		!s.fixHelps(g.ErrorClass) ||
		!s.deps.Access.Can(userOf(c), g.Tenants[0], authz.ObjDeadLetter, authz.ActFix) {
		return nil
	}
	f := fixFormFor(g.SampleID, g.Tenants[0], g.ItemTypes[0], g.Fingerprint, authz.Now(c.Request().Context()), nil)
	// The groups page it is on, with its filter, sort and page, for the
	// fix to come back to.
	f.ReturnTo = groupsReturn(c.Request().URL.RequestURI())
	return f
}

// fixHelps says whether a fix lets dead letters of error class ec be
// replayed under the policy in force (its rule is AfterFix); with no
// policy to read, it does not know, and says yes.
func (s *Server) fixHelps(ec dlq.ErrorClass) bool {
	if s.deps.Replays == nil {
		return true
	}
	t := s.deps.Replays.Policy()
	return t == nil || t.FixLetsGo(string(ec))
}
