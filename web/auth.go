package web

import (
	"net/http"
	"net/url"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

func (s *Server) login(c echo.Context) error    { return s.deps.Login.Start(c) }
func (s *Server) callback(c echo.Context) error { return s.deps.Login.Callback(c) }
func (s *Server) logout(c echo.Context) error   { return s.deps.Login.Logout(c, "/signed-out") }

// signInPage tells htmx, whose request found nobody signed in (the idle
// timeout passed while a page refreshed itself, say), to send the browser
// to the sign-in, coming back to the page the request came from
// (HX-Current-URL, when it is on this host). htmx follows HX-Redirect
// whatever the status; the sign-in judges the return path again.
func signInPage(c echo.Context) {
	back := "/"
	if u, err := url.Parse(c.Request().Header.Get("HX-Current-URL")); err == nil && u.Host == c.Request().Host && u.Path != "" {
		back = u.RequestURI()
	}
	c.Response().Header().Set("HX-Redirect", "/auth/login?return_to="+url.QueryEscape(back))
}

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
