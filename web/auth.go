package web

import (
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

func (s *Server) login(c echo.Context) error    { return s.deps.Login.Start(c) }
func (s *Server) callback(c echo.Context) error { return s.deps.Login.Callback(c) }
func (s *Server) logout(c echo.Context) error   { return s.deps.Login.Logout(c, "/signed-out") }

func (s *Server) signedOut(c echo.Context) error {
	return s.render(c, http.StatusOK, views.SignedOut(s.page(c, "Signed out", "")))
}

func (s *Server) noAccessPage(c echo.Context) templ.Component {
	return views.NoAccess(s.page(c, "No access", ""))
}

// home greets the user with their roles and the screens they may open.
func (s *Server) home(c echo.Context) error {
	if s.deps.Access.CanSomewhere(userOf(c), authz.ObjDeadLetter, authz.ActRead, nil) {
		return s.dashboard(c) // readers of dead letters start on the dashboard
	}
	p := s.page(c, "Home", "dashboard")
	var links []views.HomeLink
	if p.User.Nav.Audit {
		links = append(links, views.HomeLink{Title: "Audit log", Text: "Who did what, when and why; export and verify.", URL: "/audit"})
	}
	if p.User.Nav.Admin {
		links = append(links, views.HomeLink{Title: "Role bindings", Text: "Who holds which role in which tenant.", URL: "/admin/bindings"})
	}
	return s.render(c, http.StatusOK, views.Home(p, links))
}
