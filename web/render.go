package web

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// renderHeld is how much of a page render holds before it starts sending.
// A page that fails within it is answered with an error page instead; a
// longer one (a request page of 20,000 items is some 16 MB) is sent as it
// renders from there on, so that no page costs more than this in memory
// besides its model.
const renderHeld = 1 << 20

// render writes comp with status. It holds the first renderHeld bytes
// before sending anything, so a component that fails early never sends
// half a page; one that fails later, once sending has begun, has its
// connection cut, so that no browser takes the half it got for the page.
func (s *Server) render(c echo.Context, status int, comp templ.Component) error {
	buf := templ.GetBuffer()
	defer templ.ReleaseBuffer(buf)
	w := &heldWriter{res: c.Response(), status: status, held: buf}
	if err := comp.Render(c.Request().Context(), w); err != nil {
		if w.sending {
			s.deps.Log.Warn("page cut off after it began to send", "path", c.Path(), "err", err)
			panic(http.ErrAbortHandler)
		}
		return fmt.Errorf("render %s: %w", c.Path(), err)
	}
	if w.sending {
		return nil
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// heldWriter holds what is written to it in held until that would pass
// renderHeld, then sends the status, what it held and everything after.
type heldWriter struct {
	res     *echo.Response
	status  int
	held    *bytes.Buffer
	sending bool
}

func (w *heldWriter) Write(p []byte) (int, error) {
	if !w.sending && w.held.Len()+len(p) <= renderHeld {
		return w.held.Write(p)
	}
	if !w.sending {
		w.sending = true
		w.res.Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
		w.res.WriteHeader(w.status)
		if _, err := w.res.Write(w.held.Bytes()); err != nil {
			return 0, err
		}
	}
	return w.res.Write(p)
}

// page is the frame every screen shares: title, nav for what the user may
// see, the user's name and roles, and flash messages.
func (s *Server) page(c echo.Context, title, active string) views.Page {
	p := views.Page{
		Title:     title,
		Active:    active,
		Assets:    views.Assets{CSS: AssetPath("app.css"), JS: AssetPath("app.js"), HTMX: AssetPath("htmx.min.js")},
		RequestID: c.Response().Header().Get(echo.HeaderXRequestID),
	}
	u, ok := c.Get(ctxUser).(authz.User)
	if !ok {
		return p
	}
	vu := &views.User{Name: u.Display(), Email: u.Email, EmailVerified: u.EmailVerified, Identity: u.Issuer + "|" + u.Subject, LogoutURL: "/auth/logout"}
	for _, r := range s.deps.Access.Roles(u) {
		vu.Roles = append(vu.Roles, views.TenantRole{Tenant: r.Tenant, Role: r.Role})
	}
	can := func(obj, act string) bool {
		return PermittedSomewhere(s.deps.Access, u, Permission{Object: obj, Action: act})
	}
	readDL := can(authz.ObjDeadLetter, authz.ActRead)
	vu.Nav = views.Nav{
		Dashboard: readDL, DeadLetters: readDL, Groups: readDL, Replays: readDL,
		Audit:     can(authz.ObjAudit, authz.ActRead),
		Admin:     can(authz.ObjBindings, authz.ActRead),
		Policy:    can(authz.ObjPolicy, authz.ActRead),
		Approvals: can(replayObjects, authz.ActApprove),
		Sessions:  s.deps.Access.Scope(u, authz.ObjSessions, authz.ActRevoke, nil).All,
		Stop:      can(replayObjects, authz.ActStop),
	}
	if vu.Nav.Approvals {
		vu.Nav.Awaiting = s.awaiting(c, u)
	}
	p.User = vu
	p.TimeZone = s.timeZone(c.Request().Context(), u)
	p.Here = s.returnPage(c)
	p.SaveInPlace = c.Request().Method != http.MethodGet && c.Request().Method != http.MethodHead
	if c.Request().Header.Get(authz.PollHeader) != "" {
		// A page's own refresh on a timer (the dashboard's, say) takes no
		// flash: the message a person's action left (another tab's, after
		// its 303) waits for the next page they load, which shows it, where
		// the refresh would take it and swap in a part that may not.
		return p
	}
	if msg := s.deps.Sessions.PopString(c.Request().Context(), "flash"); msg != "" {
		p.Flash = append(p.Flash, views.Flash{Kind: views.FlashOK, Text: msg})
	}
	if msg := s.deps.Sessions.PopString(c.Request().Context(), "flash_info"); msg != "" {
		p.Flash = append(p.Flash, views.Flash{Kind: views.FlashInfo, Text: msg})
	}
	if msg := s.deps.Sessions.PopString(c.Request().Context(), "flash_error"); msg != "" {
		p.Flash = append(p.Flash, views.Flash{Kind: views.FlashError, Text: msg})
	}
	return p
}

// flash keeps a message for the next page the user sees (after a 303).
func (s *Server) flash(c echo.Context, msg string) {
	s.deps.Sessions.Put(c.Request().Context(), "flash", msg)
}

// flashInfo keeps a neutral message for the next page the user sees: what
// was done, and what was not, neither a plain success nor a failure.
func (s *Server) flashInfo(c echo.Context, msg string) {
	s.deps.Sessions.Put(c.Request().Context(), "flash_info", msg)
}

// flashError keeps an error message for the next page the user sees.
func (s *Server) flashError(c echo.Context, msg string) {
	s.deps.Sessions.Put(c.Request().Context(), "flash_error", msg)
}
