package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// What the group triage forms (group_save.go, the panel's one form, and
// group_snooze.go, group_assign.go, group_note.go, one part each) share: the group and tenant they name, where to go back,
// and how a change ends.

// groupRef reads the group and the tenant a triage form names. A tenant
// where the person may not triage is refused (refuseNamed: 404, or 403 in
// a tenant of theirs; audited) before anything else is read; a malformed
// group 404.
func (s *Server) groupRef(c echo.Context) (dlq.GroupRef, error) {
	g := dlq.GroupRef{Tenant: trimSpace(c.FormValue("tenant")), Fingerprint: trimSpace(c.FormValue("group"))}
	if !s.deps.Access.Can(userOf(c), g.Tenant, authz.ObjDeadLetter, authz.ActTriage) {
		// The group is named only when it is one: the row is the named
		// tenant's, and a form's free text is not the refused person's to
		// write into another tenant's log.
		what := "a malformed error group"
		if fingerprintPattern.MatchString(g.Fingerprint) {
			what = "error group " + g.Fingerprint
		}
		return g, s.refuseNamed(c, g.Tenant, authz.ObjDeadLetter+":"+authz.ActTriage, what+" in tenant "+g.Tenant)
	}
	if !fingerprintPattern.MatchString(g.Fingerprint) {
		return g, quarantine.Errorf(quarantine.ENOTFOUND, "There is no such error group.")
	}
	return g, nil
}

// groupReturn is the page a triage form came from (the group's list), or
// the groups page: never a download or a GET that writes (pageBack), which
// a link to the form could otherwise name for the form to start.
func (s *Server) groupReturn(c echo.Context) string {
	if r := s.pageBack(c.FormValue("return_to")); r != "/" {
		return r
	}
	return views.PathGroups
}

// groupChanged ends a triage change: done, or a conflict (a group woken
// meanwhile), as a message on the page the form came from; any other error
// as the error page shows it.
func (s *Server) groupChanged(c echo.Context, err error, done string) error {
	switch {
	case quarantine.ErrorCode(err) == quarantine.ECONFLICT:
		s.flashError(c, quarantine.ErrorMessage(err))
	case err != nil:
		return err
	default:
		s.flash(c, done)
	}
	return c.Redirect(http.StatusSeeOther, s.groupReturn(c))
}

// renderGroupForm writes a triage form again on a page of its own, with
// what was typed, a message at each bad field and the form's hidden fields
// (besides the group's: extra), with status (422 for a mistake, 409 for a
// conflict). Its lead names the group and its
// tenant, which the view writes Untrusted (a producer's subject token).
func (s *Server) renderGroupForm(c echo.Context, g dlq.GroupRef, status int, title, button string, extra []views.Hidden, controls ...views.FormControl) error {
	m := views.FormPageModel{
		Title: title, Lead: "Error group " + g.Fingerprint, LeadTenant: g.Tenant, Action: c.Request().URL.Path,
		Fields: append([]views.Hidden{{Name: "tenant", Value: g.Tenant}, {Name: "group", Value: g.Fingerprint}, {Name: "return_to", Value: s.groupReturn(c)}},
			extra...),
		Controls: controls, Button: button, BackURL: s.groupReturn(c),
	}
	return s.render(c, status, views.FormPage(s.page(c, title, "groups"), m))
}
