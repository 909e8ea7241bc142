package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
)

// sessionRevoke ends every session of one person: POST /admin/sessions/revoke
// with issuer and subject, for admins of every tenant (the route is
// EveryTenant). It is audited in the same transaction.
func (s *Server) sessionRevoke(c echo.Context) error {
	t, err := readFormText(c)
	if err != nil {
		return err
	}
	issuer, subject := t.get("issuer"), t.get("subject")
	if issuer == "" || subject == "" || t.Errors() != nil {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "Choose a person from the list.")
	}
	n, err := authz.RevokeSessions(c.Request().Context(), s.deps.Pool, issuer, subject, userOf(c), s.event(c, "", ""))
	if err != nil {
		return err
	}
	// Their sessions are not answered for from memory any more
	// (crossOriginRefused): a stolen cookie is a stranger's from now on.
	s.crossSiteDenials.ForgetPerson(crossSitePerson(quarantine.Actor{Issuer: issuer, Subject: subject}), time.Now())
	switch n {
	case 0:
		s.flash(c, "That person had no session left to end.")
	case 1:
		s.flash(c, "Ended 1 session.")
	default:
		s.flash(c, fmt.Sprintf("Ended %d sessions.", n))
	}
	return c.Redirect(http.StatusSeeOther, "/admin/sessions")
}
