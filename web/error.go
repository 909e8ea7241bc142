package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// errorStatus is the one mapping from errors to HTTP statuses: each
// quarantine.Error code has its status, echo's own errors (no route, a
// method not allowed) keep theirs, a statement PostgreSQL stopped
// (tooLong) and a session PostgreSQL out of reach could not read
// (databaseAway) are 503s, text it could not store (notText) a 422, and
// anything else is a 500.
func errorStatus(err error) int {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he.Code
	}
	if tooLong(err) || errors.As(err, new(databaseAway)) {
		return http.StatusServiceUnavailable
	}
	if notText(err) {
		return http.StatusUnprocessableEntity
	}
	switch quarantine.ErrorCode(err) {
	case quarantine.ENOTFOUND:
		return http.StatusNotFound
	case quarantine.ECONFLICT:
		return http.StatusConflict
	case quarantine.EINVALID:
		return http.StatusUnprocessableEntity
	case quarantine.EFORBIDDEN:
		return http.StatusForbidden
	case quarantine.EUNAUTHORIZED:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// tooLong reports whether err is PostgreSQL's query_canceled (57014): the
// statement ran past the pool's statement_timeout (15 s for the web's by
// default), or was cancelled. Nothing is wrong with the data; a narrower
// selection, or the same one when the database is less busy, may well work.
func tooLong(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57014"
}

// notText reports whether err is PostgreSQL refusing text a request
// carried: a NUL or bytes that are not UTF-8 (22021,
// character_not_in_repertoire), or a character the database's encoding
// lacks (22P05, untranslatable_character). Every filter and form refuses
// such text at its field first (formText); this answers one that did not
// as what it is, the request's fault, not the console's.
func notText(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "22021" || pe.Code == "22P05")
}

// errorText is the title and the sentence a person sees for err answered
// with status. A 404 always says the same, so that a missing object and
// another tenant's look alike; a 5xx says nothing of its cause (it is
// logged, with the request id the page shows) but for a statement that
// took too long, which says what to do; everything else shows the error's
// message, written for the person who caused it.
func errorText(err error, status int) (title, detail string) {
	switch {
	case status == http.StatusServiceUnavailable && tooLong(err):
		return "Took too long", "The database took too long for this and stopped it. Narrow the selection (a filter, fewer items) " +
			"or try again in a moment; if it keeps happening, quote the request id to whoever runs the console."
	case status == http.StatusServiceUnavailable && errors.As(err, new(databaseAway)):
		return "Database not answering", "The console cannot reach its database just now (a restart or a failover, most likely), " +
			"so it could not do this. Try again in a moment; you stay signed in. If it lasts, quote the request id to whoever runs the console."
	case status == http.StatusNotFound:
		return "Not found", "There is nothing here, or it is not yours to see."
	case status == http.StatusUnprocessableEntity && notText(err):
		return http.StatusText(status), dlq.UnstorableTextMessage
	case status >= 500:
		return "Something went wrong", "The error was logged. Quote the request id when you report it."
	}
	title = http.StatusText(status)
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if msg, ok := he.Message.(string); ok {
			return title, msg
		}
		return title, title
	}
	return title, quarantine.ErrorMessage(err)
}

// handleError is echo's HTTPErrorHandler: every error a handler returns is
// answered here, with errorStatus's status and a page (JSON for clients
// that ask for it, and for 401s but a browser's page: wantsPage). Only 5xx
// are logged with their cause.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		s.deps.Log.Error("error after response started", "path", c.Path(), "err", err)
		return
	}
	if errors.Is(err, authz.ErrLogin) {
		p := s.page(c, "Sign-in failed", "")
		if rerr := s.render(c, http.StatusBadRequest, views.LoginFailed(p, err.Error())); rerr != nil {
			s.deps.Log.Error("render error page", "err", rerr)
		}
		return
	}
	status := errorStatus(err)
	title, detail := errorText(err, status)
	if notText(err) {
		// A form that lets such text through to PostgreSQL should refuse
		// it at its field (formText): say which request did.
		s.deps.Log.Warn("request carried text PostgreSQL refused", "method", c.Request().Method, "path", c.Request().URL.Path,
			"request_id", c.Response().Header().Get(echo.HeaderXRequestID), "err", err)
	}
	if status >= 500 {
		s.deps.Log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path,
			"request_id", c.Response().Header().Get(echo.HeaderXRequestID),
			"client_request_id", ClientRequestID(c.Request().Context()), "err", err)
	}
	if status == http.StatusUnauthorized && wantsPage(c.Request()) {
		back := "/"
		var first signInFirstError
		if errors.As(err, &first) && first.ReturnTo != "" {
			back = first.ReturnTo
		}
		if rerr := s.render(c, status, views.SignInFirst(s.page(c, "Sign in first", ""), signInURL(back))); rerr != nil {
			s.deps.Log.Error("render error page", "err", rerr)
		}
		return
	}
	if status == http.StatusUnauthorized || c.Request().Header.Get("Accept") == "application/json" {
		if rerr := c.JSON(status, map[string]string{"error": detail}); rerr != nil {
			s.deps.Log.Error("write error", "err", rerr)
		}
		return
	}
	s.viewer(c)
	page := views.ErrorPage(s.page(c, title, ""), status, title, detail)
	var again crossSiteGetError
	if errors.As(err, &again) && again.Again != "" {
		page = views.AgainPage(s.page(c, title, ""), status, title, detail, again.Again, again.What)
	}
	if rerr := s.render(c, status, page); rerr != nil {
		s.deps.Log.Error("render error page", "err", rerr)
	}
}

// wantsPage reports whether r is a browser's own request for a page (a
// form sent, a link followed): one that accepts HTML and is not htmx's,
// whose 401 app.js words itself.
func wantsPage(r *http.Request) bool {
	return r.Header.Get("HX-Request") == "" && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// viewer finds who is signed in for an error page that no route's
// middleware reached (a path with no route, a method it lacks, a static
// file that is not there), so that the page's top bar shows them and their
// links rather than "Sign in". It decides nothing: the links lead to
// routes that check again.
func (s *Server) viewer(c echo.Context) {
	if _, ok := c.Get(ctxUser).(authz.User); ok || s.deps.Login == nil { // no sign-in: a handler alone, in a unit test
		return
	}
	if c.Get(ctxSessionUnread) != nil { // sessionFailed: there is no session to read
		return
	}
	u, ok, err := s.deps.Login.Current(c.Request().Context())
	if err != nil {
		s.deps.Log.Warn("error page: read the session", "err", err)
		return
	}
	if ok {
		c.Set(ctxUser, u)
	}
}

// deniedText is the 403 page's sentence for a refusal of need ("object:
// action", as the audit row records it, perhaps with " in every tenant")
// in tenant ("" when refused in every tenant): which right is missing,
// where, and who grants it. The tenant is one the caller may know of
// (refuseNamed answers 404 for the others).
func deniedText(tenant, need string) string {
	every := strings.HasSuffix(need, " in every tenant")
	need = strings.TrimSuffix(need, " in every tenant")
	obj, act := need, ""
	if i := strings.LastIndexByte(need, ':'); i >= 0 {
		obj, act = need[:i], need[i+1:]
	}
	where := "in any of your tenants"
	switch {
	case every:
		where = "in every tenant"
	case tenant == authz.AllTenants:
		where = "in every tenant"
	case tenant != "":
		where = "in " + tenant
	}
	return "This needs the " + act + " right on " + objectText(obj) + " " + where + ", which your roles do not give. " +
		"An administrator grants roles on the Role bindings page."
}

// objectText names a permission object as people say it.
func objectText(obj string) string {
	switch obj {
	case authz.ObjDeadLetter:
		return "dead letters"
	case authz.ObjAudit:
		return "the audit log"
	case authz.ObjBindings:
		return "role bindings"
	case authz.ObjPolicy:
		return "the replay policy"
	case authz.ObjSessions:
		return "sign-in sessions"
	case replayObjects:
		return "replays"
	}
	if class, ok := strings.CutPrefix(obj, replayObjects[:len(replayObjects)-1]); ok {
		return "replays of class " + class
	}
	return obj
}

// ctxSessionUnread marks the echo context of an answer to a request whose
// session could not be read (sessionFailed): its error page names no one.
const ctxSessionUnread = "quarantine.session_unread"

// sessionFailed is the session manager's ErrorFunc: scs calls it when it
// could not read a browser's session before the request, or save it as the
// response starts. Its default wrote "Internal Server Error" as plain
// text, its cause only to the standard logger (review round 44).
//
// A session that could not be read (PostgreSQL restarting, say) answers
// as every error does (handleError: 503 "Database not answering" when
// PostgreSQL is out of reach, the console's page, or JSON, with the
// request id), logged with it; nothing was done. A session that could not
// be saved (authz.ErrSessionNotSaved) comes after the handler did its
// work: a change committed and audited, whose flash was to be saved with
// the session. Its answer (a 303 to the page, say) goes out as it is,
// without the session's change; an error page there would tell the person
// a done change failed. A sign-in whose session was not saved leaves the
// browser signed out: the page it lands on asks to sign in again.
func (s *Server) sessionFailed(w http.ResponseWriter, r *http.Request, err error) {
	rid := w.Header().Get(echo.HeaderXRequestID)
	if errors.Is(err, authz.ErrSessionNotSaved) {
		s.deps.Log.Error("session not saved: the response goes out without its change", "method", r.Method, "path", r.URL.Path,
			"request_id", rid, "err", err)
		return
	}
	c := s.echo.NewContext(r, w)
	c.Set(ctxSessionUnread, true)
	err = fmt.Errorf("read the session: %w", err)
	if dlq.Unreachable(err) {
		err = databaseAway{err}
	}
	s.handleError(err, c)
}

// databaseAway is an error of reading a session from a PostgreSQL out of
// reach (dlq.Unreachable): a 503 that says so (errorStatus, errorText).
// Only the session's read is marked so: in a handler, what Unreachable
// takes for PostgreSQL out of reach (a cancelled context, any network
// error) may be something else.
type databaseAway struct{ error }

func (e databaseAway) Unwrap() error { return e.error }
