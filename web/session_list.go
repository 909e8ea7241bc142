package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// sessionList shows who is signed in, to admins of every tenant (a session
// is not a tenant's: it reaches every tenant its person may see; the route
// is EveryTenant).
func (s *Server) sessionList(c echo.Context) error {
	me := userOf(c).Actor
	people, err := authz.ActivePeople(c.Request().Context(), s.deps.Pool)
	if err != nil {
		return err
	}
	m := views.SessionsModel{RevokeURL: "/admin/sessions/revoke"}
	for _, p := range people {
		name := p.User.Name
		if name == "" && p.User.Email == "" {
			name = p.User.Display() // its subject: nobody is listed nameless
		}
		m.People = append(m.People, views.SessionPerson{
			Name: name, Email: emailLabel(p.User.Email, p.User.EmailVerified), Issuer: p.User.Issuer,
			Subject: p.User.Subject, Sessions: p.Sessions, LastLogin: p.LastLogin, Own: p.User.SameIdentity(me),
		})
	}
	return s.render(c, http.StatusOK, views.AdminSessions(s.page(c, "Sessions", "sessions"), m))
}
