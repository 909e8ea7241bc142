package web

import (
	"fmt"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// render writes comp with status. It renders into a buffer first, so a
// failing component never sends half a page.
func (s *Server) render(c echo.Context, status int, comp templ.Component) error {
	buf := templ.GetBuffer()
	defer templ.ReleaseBuffer(buf)
	if err := comp.Render(c.Request().Context(), buf); err != nil {
		return fmt.Errorf("render %s: %w", c.Path(), err)
	}
	return c.HTMLBlob(status, buf.Bytes())
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
	p.Here = c.Request().URL.RequestURI()
	if msg := s.deps.Sessions.PopString(c.Request().Context(), "flash"); msg != "" {
		p.Flash = append(p.Flash, views.Flash{Kind: views.FlashOK, Text: msg})
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

// flashError keeps an error message for the next page the user sees.
func (s *Server) flashError(c echo.Context, msg string) {
	s.deps.Sessions.Put(c.Request().Context(), "flash_error", msg)
}
