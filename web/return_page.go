package web

import (
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
)

// returnPage is the page a form on this page comes back to (the user
// menu's time zone form): a path of this site that answers GET. For a GET
// of a page it is the request's own path and query; a download's (the
// refusal of an export another site started, say) is its nearest page. A
// page a POST rendered (a confirmation, the chain check's result, a
// form's 422) has a path that
// may answer POST only, so it is, in order: the page the form was sent
// from (the Referer, when it is this site's and a GET page; a Referer of
// another site, or one that names another host in its path, is never
// taken), the request's path when it answers GET too, the nearest parent
// of it that does (/deadletters/5/discard → /deadletters/5, /audit/verify
// → /audit), or "/". It is where the form goes without JavaScript: with
// it, the form of such a page saves in place (views.Page.SaveInPlace) and
// what was typed on the page stays.
func (s *Server) returnPage(c echo.Context) string {
	r := c.Request()
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && s.answersGet(r.URL.Path) {
		return r.URL.RequestURI()
	}
	if ref := sameSiteReferer(r); ref != "" {
		if u, err := url.Parse(ref); err == nil && s.answersGet(u.Path) {
			return ref
		}
	}
	for p := r.URL.Path; p != "" && p != "/"; p = p[:strings.LastIndex(p, "/")] {
		if authz.LocalPath(p) == p && s.answersGet(p) {
			return p
		}
	}
	return "/"
}

// sameSiteReferer is the path and query of r's Referer when it is a page
// of the host r was sent to, else "".
func sameSiteReferer(r *http.Request) string {
	ref := r.Header.Get("Referer")
	if ref == "" {
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || !strings.EqualFold(u.Host, r.Host) {
		return ""
	}
	p := u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	if authz.LocalPath(p) != p {
		return ""
	}
	return p
}

// answersGet tells whether path is a page: the route echo serves a GET of
// path by is a GET route that neither writes nor sends a file, and no
// route of another method has path more exactly (POST /audit/verify is no
// page, though GET /audit/:seq would take the path and answer that there
// is no such event).
func (s *Server) answersGet(path string) bool {
	if s.echo == nil {
		return false
	}
	get := s.routeFor(http.MethodGet, path)
	if get == "" || !s.hasRoute(http.MethodGet, get) {
		return false
	}
	if r := s.routeOf[routeKey(http.MethodGet, get)]; r.Writes || r.Download != NoDownload {
		// A download, or a GET that writes (an export, audited): a
		// form that came back to it would start it unasked, past the
		// refusal of one another site started (crossSiteGet).
		return false
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if other := s.routeFor(m, path); other != get && s.hasRoute(m, other) {
			return false
		}
	}
	return true
}

// routeFor is the route pattern echo's router takes path to for method
// ("" when none).
func (s *Server) routeFor(method, path string) string {
	c := s.echo.NewContext(nil, nil)
	s.echo.Router().Find(method, path, c)
	return c.Path()
}

// hasRoute tells whether echo has a route of method with pattern.
func (s *Server) hasRoute(method, pattern string) bool { return s.patterns[method][pattern] }

// routePatterns are the route patterns of e by method.
func routePatterns(e *echo.Echo) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, r := range e.Routes() {
		if out[r.Method] == nil {
			out[r.Method] = map[string]bool{}
		}
		out[r.Method][r.Path] = true
	}
	return out
}

// pageBack is where a form posted with return_to p goes back to: p when it
// is a local page (answersGet), else "/". A return_to naming a download
// or a GET that writes would have the form start it, same-origin, past
// the refusal of one another site started.
func (s *Server) pageBack(p string) string {
	r, u, ok := localReturn(p)
	if !ok || !s.answersGet(u.Path) {
		return "/"
	}
	return r
}

// localReturn reads p, a form's return_to, as a path of this site
// (authz.LocalPath) and parses it; false when it does not parse, or its
// path is not the one a browser would follow: one with dot segments
// ("/static/../audit/export.csv", or %2e%2e) or a "\" (a "/" to a
// browser) would take the browser elsewhere than the router matched.
func localReturn(p string) (string, *url.URL, bool) {
	r := authz.LocalPath(p)
	u, err := url.Parse(r)
	if err != nil || strings.Contains(u.Path, `\`) || path.Clean(u.Path) != u.Path {
		return r, nil, false
	}
	return r, u, true
}
