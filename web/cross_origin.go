package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
)

// Unsafe requests another site started are refused by
// http.CrossOriginProtection before the session is read: its deny handler
// is crossOriginRefused, which reads the session (and then the objects the
// request names) only when the person may still have rows written.

// crossOriginRefused is the deny handler of http.CrossOriginProtection:
// a browser session known to sign in a person over the limit of refusals
// another site started (authz.CrossSiteDenials.Refused) is answered at
// once, with no round trip to PostgreSQL, not even the session's read;
// any other goes on to readSession and crossOriginDenied. The answer is
// the same either way.
func (s *Server) crossOriginRefused(readSession func(http.Handler) http.Handler) http.Handler {
	denied := readSession(http.HandlerFunc(s.crossOriginDenied))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key, ok := s.sessionKey(r); ok && s.crossSiteDenials.Refused(key, time.Now()) {
			refuseCrossOrigin(w)
			return
		}
		denied.ServeHTTP(w, r)
	})
}

// refuseCrossOrigin is the answer to every unsafe request another site
// started, whoever sent it and whatever it names.
func refuseCrossOrigin(w http.ResponseWriter) {
	http.Error(w, "Cross-site request refused.", http.StatusForbidden)
}

// sessionKey is what authz.CrossSiteDenials remembers the browser session
// of r by (authz.SessionKey of its cookie's token). False without a
// session cookie.
func (s *Server) sessionKey(r *http.Request) (string, bool) {
	cookie, err := r.Cookie(s.deps.Sessions.Cookie.Name)
	if err != nil || cookie.Value == "" {
		return "", false
	}
	return authz.SessionKey(cookie.Value), true
}

// crossSitePerson is how authz.CrossSiteDenials tells people apart.
func crossSitePerson(a quarantine.Actor) string { return a.Issuer + " " + a.Subject }

// crossOriginDenied answers unsafe requests from other sites, rejected by
// http.CrossOriginProtection, once the session is read. With a signed-in
// session (someone's browser was led to post), the attempt is audited
// under that person; without one it is counted and logged only, so
// strangers cannot write to the audit log. The audited ones are limited
// per person (authz.CrossSiteDenials, as appendDenied's): over the limit,
// refused and not written, and the session is remembered so that the next
// costs no read (crossOriginRefused) until it ends: by itself (its idle
// deadline or its sign-in's end), or here (a sign-out, a new sign-in, a
// refresh refused: Login tells the memory; "sign out everywhere":
// sessionRevoke does), or when a read finds it signs nobody in.
func (s *Server) crossOriginDenied(w http.ResponseWriter, r *http.Request) {
	// The attempt is recorded whether or not the client waits for the
	// answer: the reads of what it names and its rows are not the client's
	// to cancel.
	ctx, cancel := audit.Detached(r.Context())
	defer cancel()
	r = r.WithContext(ctx)
	reqID := w.Header().Get(echo.HeaderXRequestID)
	reason := "cross-origin request (Origin " + r.Header.Get("Origin") + ", Sec-Fetch-Site " + r.Header.Get("Sec-Fetch-Site") + ")"
	read := time.Now() // before the read: what it found may have ended since
	u, ok, err := s.deps.Login.Current(r.Context())
	if err != nil {
		s.deps.Log.Error("read session of a cross-origin request", "err", err, "request_id", reqID)
	}
	key, hasKey := s.sessionKey(r)
	if !ok {
		if hasKey && err == nil {
			// The cookie signs nobody in (its session ended, here or on
			// another replica): not to be answered for from memory.
			s.crossSiteDenials.Forget(key, time.Now())
		}
		s.deps.Denials.Record(r, authz.DenialCrossOrigin, reason, reqID)
		refuseCrossOrigin(w)
		return
	}
	now := time.Now()
	if hasKey {
		s.crossSiteDenials.Remember(key, crossSitePerson(u.Actor), read, authz.SessionEnds(r.Context()))
	}
	// Checked before the objects are looked up: over the limit, it costs
	// no further query and writes nothing.
	admitted := s.crossSiteDenials.Allow(crossSitePerson(u.Actor), now)
	if !admitted.Write {
		refuseCrossOrigin(w)
		return
	}
	e := audit.Event{
		Actor: u.Actor, Action: "csrf.denied", Outcome: audit.OutcomeDenied, ObjectType: "route", ObjectID: r.Method + " " + r.URL.Path,
		Reason:      reason,
		RequestMeta: quarantine.RequestMeta{RequestID: reqID, RemoteAddr: s.echo.IPExtractor(r), UserAgent: r.UserAgent()},
	}
	events := s.crossOriginTried(w, r, u, reason+" to "+e.ObjectID)
	if len(events) == 0 {
		events = []audit.Event{e}
	}
	noteLimited(events, admitted)
	if _, err := audit.AppendBatchFunc(r.Context(), s.deps.Pool, events); err != nil {
		s.deps.Log.Error("audit cross-origin request", "err", err, "request_id", reqID)
	}
	refuseCrossOrigin(w)
}

// crossOriginTried are the csrf.denied rows (why) of a cross-origin
// request of a route that names objects, as a refusal of the route names
// them (tried): the object of its path, in each tenant it spans, or the
// dead letters its form selects, one row per tenant. None for any other
// request. A selection's form is read no further than the route's body
// class allows; one that cannot be read names nothing.
func (s *Server) crossOriginTried(w http.ResponseWriter, r *http.Request, u authz.User, why string) []audit.Event {
	c := s.echo.NewContext(r, w)
	s.echo.Router().Find(r.Method, echo.GetPath(r), c)
	rt, ok := s.routeOf[routeKey(r.Method, c.Path())]
	if !ok || rt.Locate == nil {
		return nil
	}
	if rt.Tenancy == SelectedTenants {
		r.Body = http.MaxBytesReader(w, r.Body, s.bodyLimit(rt.Body))
	}
	c.Set(ctxUser, u)
	return s.tried(c, rt, "csrf.denied", why)
}

// routeKey is how Server.routeOf finds a route: its method and pattern.
func routeKey(method, pattern string) string { return method + " " + pattern }
