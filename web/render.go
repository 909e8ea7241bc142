package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
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
	vu := &views.User{Name: u.Display(), Email: u.Email, LogoutURL: "/auth/logout"}
	for _, r := range s.deps.Access.Roles(u) {
		vu.Roles = append(vu.Roles, views.TenantRole{Tenant: r.Tenant, Role: r.Role})
	}
	can := func(obj, act string) bool { return s.deps.Access.CanSomewhere(u, obj, act, nil) }
	readDL := can(authz.ObjDeadLetter, authz.ActRead)
	vu.Nav = views.Nav{
		Dashboard: readDL, DeadLetters: readDL, Groups: readDL,
		Audit:     can(authz.ObjAudit, authz.ActRead),
		Admin:     can(authz.ObjBindings, authz.ActRead),
		Policy:    can(authz.ObjPolicy, authz.ActRead),
		Approvals: can("replay:*", authz.ActApprove),
	}
	p.User = vu
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

// handleError maps errors to a status and a page. Only 5xx are logged with
// their cause; the person sees a sentence and the request id.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		s.deps.Log.Error("error after response started", "path", c.Path(), "err", err)
		return
	}
	status, title, detail := http.StatusInternalServerError, "Something went wrong", "The error was logged. Quote the request id when you report it."
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he):
		status = he.Code
		title = http.StatusText(status)
		if msg, ok := he.Message.(string); ok && status < 500 {
			detail = msg
		}
	case errors.Is(err, authz.ErrLogin):
		p := s.page(c, "Sign-in failed", "")
		if rerr := s.render(c, http.StatusBadRequest, views.LoginFailed(p, err.Error())); rerr != nil {
			s.deps.Log.Error("render error page", "err", rerr)
		}
		return
	case errors.Is(err, dlq.ErrNotFound), errors.Is(err, audit.ErrNotFound), errors.Is(err, authz.ErrNotFound):
		status, title, detail = http.StatusNotFound, "Not found", "There is nothing here, or it is not yours to see."
	case errors.Is(err, dlq.ErrConflict), errors.Is(err, authz.ErrConflict):
		status, title, detail = http.StatusConflict, "Conflict", "Someone changed this in the meantime. Reload and try again."
	case errors.Is(err, dlq.ErrInvalid), errors.Is(err, audit.ErrInvalid), errors.Is(err, authz.ErrInvalid):
		status, title, detail = http.StatusUnprocessableEntity, "Invalid request", "The request could not be understood."
	}
	if status >= 500 {
		s.deps.Log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path,
			"request_id", c.Response().Header().Get(echo.HeaderXRequestID), "err", err)
	}
	if status == http.StatusUnauthorized || c.Request().Header.Get("Accept") == "application/json" {
		if rerr := c.JSON(status, map[string]string{"error": detail}); rerr != nil {
			s.deps.Log.Error("write error", "err", rerr)
		}
		return
	}
	if rerr := s.render(c, status, views.ErrorPage(s.page(c, title, ""), status, title, detail)); rerr != nil {
		s.deps.Log.Error("render error page", "err", rerr)
	}
}
