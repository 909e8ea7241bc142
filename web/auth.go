package web

import (
	"net/http"
	"net/url"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

func (s *Server) login(c echo.Context) error    { return s.deps.Login.Start(c) }
func (s *Server) callback(c echo.Context) error { return s.deps.Login.Callback(c) }
func (s *Server) logout(c echo.Context) error   { return s.deps.Login.Logout(c, "/signed-out") }

// errSignInFirst is the answer to a request that found nobody signed in.
var errSignInFirst = quarantine.Errorf(quarantine.EUNAUTHORIZED, "Sign in first.")

// signInFirstError is errSignInFirst for one request: the page a browser
// is shown (handleError) offers the sign-in, coming back to ReturnTo, a
// local path ("/" when empty).
type signInFirstError struct{ ReturnTo string }

func (e signInFirstError) Error() string { return errSignInFirst.Error() }
func (e signInFirstError) Unwrap() error { return errSignInFirst }

// signInFirst answers a request of a route that needs a signed-in person
// and found nobody: a page's GET goes to the sign-in, coming back to the
// page. Anything else is answered 401: a person's htmx request also tells
// htmx to send the browser to the sign-in (signInPage); a poll does not
// (authz.IsPoll: nobody may be at the machine, and a provider's single
// sign-on would sign the tab in again unasked, which would void the idle
// timeout), and app.js says that the session ended; a page a poll reloads
// (authz.PollParam) and a browser's form are shown a page with a sign-in
// link, coming back to the page (returnPage); other clients get JSON.
func (s *Server) signInFirst(c echo.Context) error {
	r := c.Request()
	switch {
	case r.Header.Get("HX-Request") != "":
		if !authz.IsPoll(r) {
			signInPage(c) // htmx swaps nothing from a 401: the page goes to the sign-in
		}
	case r.Method == http.MethodGet && !authz.IsPoll(r):
		return c.Redirect(http.StatusFound, signInURL(r.URL.RequestURI()))
	}
	return signInFirstError{ReturnTo: s.returnPage(c)}
}

// signInURL is the sign-in that comes back to back, a local path (the
// sign-in judges it again).
func signInURL(back string) string {
	return "/auth/login?return_to=" + url.QueryEscape(back)
}

// signInPage tells htmx, whose request found nobody signed in (a person's
// click after the idle timeout passed), to send the browser to the
// sign-in, coming back to the page the request came from (HX-Current-URL,
// when it is on this host). htmx follows HX-Redirect whatever the status;
// the sign-in judges the return path again.
func signInPage(c echo.Context) {
	back := "/"
	if u, err := url.Parse(c.Request().Header.Get("HX-Current-URL")); err == nil && u.Host == c.Request().Host && u.Path != "" {
		back = u.RequestURI()
	}
	c.Response().Header().Set("HX-Redirect", signInURL(back))
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
