package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
)

const ctxUser = "quarantine.user"

// userOf returns the signed-in user enforce put on the context.
func userOf(c echo.Context) authz.User {
	u, _ := c.Get(ctxUser).(authz.User)
	return u
}

// hsts tells browsers to use https only for this host, for a year. It does
// not cover subdomains: the console cannot speak for its parent domain.
const hsts = "max-age=31536000"

// securityHeaders sets the headers every response carries: a CSP without
// inline script, no MIME sniffing, no framing, a strict referrer policy,
// over https, HSTS, and "Cache-Control: no-store". The pages show what
// producers sent (payloads, headers, stack traces, the items a replay will
// publish) and who did what: no browser's disk cache, Back button or
// shared cache may keep them after the person signed out, as none keeps
// the downloads of the same bytes. The static assets, which show nothing
// of anyone's, replace it with their own caching (StaticHandler).
func securityHeaders(next http.Handler, formTargets string, secure bool) http.Handler {
	csp := "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'" + formTargets
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if secure {
			h.Set("Strict-Transport-Security", hsts)
		}
		next.ServeHTTP(w, r)
	})
}

// enforce is the route table's middleware: it refuses a query the parser
// would read only in part (refuseUnreadableQuery), then a GET that writes
// when the browser says it was not started from the console's own pages
// (fetchmeta.go), lets public routes through, sends people who are not
// signed in to the sign-in (signInFirst), shows the "no access" page to
// people without any role (refuseRoleless, audited as denied), answers
// 403 (audited as denied) when the
// route's permission is not held in any tenant, reads the form
// (readForm), and applies the route's tenancy (locate). The policy it
// checks is at least as new as the database's (Access.Fresh).
func (s *Server) enforce(r Route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			// First, before anything reads the query: the refusal of a GET
			// another site started offers to start it again with its
			// query as read (crossSiteGet), which would be the wider one,
			// and a person not signed in learns it now, not after signing in.
			if err := refuseUnreadableQuery(c); err != nil {
				return err
			}
			if r.Writes && authz.StartedOutside(c.Request()) {
				return crossSiteGet(c.Request(), r.startsText(c)) // before the session, a denial or anything else is written
			}
			if r.Access == AccessPublic {
				if err := s.readForm(c, r); err != nil {
					return err
				}
				return next(c)
			}
			u, ok, err := s.deps.Login.Current(c.Request().Context())
			if err != nil {
				return err
			}
			if !ok {
				return s.signInFirst(c)
			}
			c.Set(ctxUser, u)
			// Counted from here to the answer: the checks, body and
			// locator below read the database too (person_limit.go).
			release, err := s.personSlot(c, r, u)
			if err != nil {
				return err
			}
			defer release()
			// A binding removed on any replica gives nothing from now on,
			// whether or not this one's listener has heard of it.
			if err := s.deps.Access.Fresh(c.Request().Context()); err != nil {
				return err
			}
			if len(s.deps.Access.Roles(u)) == 0 {
				return s.refuseRoleless(c, r)
			}
			if r.Access == AccessPerm && !PermittedSomewhere(s.deps.Access, u, r.Perm) {
				return s.denyRoute(c, r, r.Perm.Object+":"+r.Perm.Action)
			}
			if r.Tenancy == EveryTenant && !s.deps.Access.Scope(u, r.Perm.Object, r.Perm.Action, nil).All {
				return s.denyRoute(c, r, r.Perm.Object+":"+r.Perm.Action+" in every tenant")
			}
			// The body is read only now, for a person who may use the
			// route: a client nobody signed in, or one without the route's
			// right, costs no read of up to the route's limit (a payload
			// edit's is 24 MiB). A refused selection's denial rows read
			// their ids themselves (tried), under the same limit.
			if err := s.readForm(c, r); err != nil {
				return err
			}
			if r.Locate != nil {
				if err := s.locate(c, r); err != nil {
					return err
				}
			}
			return next(c)
		}
	}
}

// denyRoute refuses route r to a caller who does not hold its permission
// (need) where the route applies it, and answers 403 whatever the request
// names, so the answer says nothing of whether that exists or whose it is.
// The denied rows name what was tried (tried): the object the path names
// or the dead letters the form selects, each in its tenant, and a
// selection's ids of no dead letter outside any tenant; when it names
// nothing, one row outside any tenant, whose object is the route and whose
// reason names the path as requested.
func (s *Server) denyRoute(c echo.Context, r Route, need string) error {
	s.auditRouteDenied(c, r, "needs "+need+" for route "+r.Method+" "+r.Path)
	return quarantine.Errorf(quarantine.EFORBIDDEN, "%s", deniedText("", need))
}

// refuseRoleless answers a signed-in person who holds no role at all (in
// no group the console binds, or whose bindings an admin removed: roles
// are computed on every request, a session lives on) with the "no access"
// page, whatever route they ask for. The refusal is theirs and audited as
// denyRoute's is (what was tried, "holds no role"), under the per-person
// limit of appendDenied: a person without a role cannot do anything else,
// and each page they open is refused.
func (s *Server) refuseRoleless(c echo.Context, r Route) error {
	need := "a role"
	if r.Access == AccessPerm {
		need = r.Perm.Object + ":" + r.Perm.Action
	}
	s.auditRouteDenied(c, r, "holds no role; needs "+need+" for route "+r.Method+" "+r.Path)
	return s.render(c, http.StatusForbidden, s.noAccessPage(c))
}

// auditRouteDenied writes the denied rows of a request of route r refused
// before its locator applied r's tenancy (why): what the request names
// (tried), or one row outside any tenant, whose object is the route and
// whose reason names the path as requested. Its reads (find) and writes
// (appendDenied) do not depend on the client waiting for the answer
// (audit.Detached): the attempt is recorded whether or not it hung up.
func (s *Server) auditRouteDenied(c echo.Context, r Route, why string) {
	if events := s.tried(c, r, "authz.denied", why); len(events) > 0 {
		s.appendDenied(c, events...)
		return
	}
	if path := c.Request().URL.Path; path != r.Path {
		why += " (requested as " + path + ")"
	}
	s.auditDenied(c, "", "authz.denied", why)
}

// deny records a refused attempt in the audit log and answers 403.
func (s *Server) deny(c echo.Context, tenant, need, what string) error {
	s.auditDenied(c, tenant, "authz.denied", "needs "+need+" for "+what)
	return quarantine.Errorf(quarantine.EFORBIDDEN, "%s", deniedText(tenant, need))
}

// refuseNamed refuses an action in tenant, a name a form field gave, that
// the caller may not do there (need, for what). Where they hold a role the
// tenant is theirs to know, and the answer is deny's 403; elsewhere it is
// a 404, as for another tenant's object, so that a name typed into a form
// says nothing of whether such a tenant exists. Both are audited.
func (s *Server) refuseNamed(c echo.Context, tenant, need, what string) error {
	if s.holdsRoleIn(userOf(c), tenant) {
		return s.deny(c, tenant, need, what)
	}
	s.auditDenied(c, tenant, "authz.denied", "needs "+need+" for "+what+" (no role in the tenant)")
	return quarantine.Errorf(quarantine.ENOTFOUND, "There is nothing here.")
}

// holdsRoleIn reports whether u holds any role in tenant, or everywhere.
// Every tenant is "*" to know about.
func (s *Server) holdsRoleIn(u authz.User, tenant string) bool {
	if tenant == authz.AllTenants {
		return true
	}
	for _, r := range s.deps.Access.Roles(u) {
		if r.Tenant == tenant || r.Tenant == authz.AllTenants {
			return true
		}
	}
	return false
}

// notFoundDenied records a cross-tenant attempt and answers 404, so the
// object's existence does not leak.
func (s *Server) notFoundDenied(c echo.Context, tenant, objType, objID string) error {
	return s.notFoundDeniedIn(c, []string{tenant}, objType, objID)
}

// notFoundDeniedIn is notFoundDenied for an object that spans tenants (a
// selection of several tenants' dead letters): one row in each of the
// tenants the caller may not see, written together, so that each tenant's
// auditors see the attempt on what is theirs.
func (s *Server) notFoundDeniedIn(c echo.Context, tenants []string, objType, objID string) error {
	events := make([]audit.Event, 0, len(tenants))
	for _, tenant := range tenants {
		e := s.event(c, "authz.denied", audit.OutcomeDenied)
		e.Tenant, e.ObjectType, e.ObjectID = tenant, objType, objID
		e.Reason = "object of a tenant outside the caller's scope"
		events = append(events, e)
	}
	s.appendDenied(c, events...)
	return quarantine.Errorf(quarantine.ENOTFOUND, "There is nothing here.")
}

// auditDenied records that the route refused the caller in tenant.
func (s *Server) auditDenied(c echo.Context, tenant, action, reason string) {
	e := s.event(c, action, audit.OutcomeDenied)
	e.Tenant, e.Reason, e.ObjectType, e.ObjectID = tenant, reason, "route", c.Request().Method+" "+c.Path()
	s.appendDenied(c, e)
}

// appendDenied writes the denial rows of one refusal, events, together,
// whether or not the client still waits (audit.AppendBatchFunc does not
// stop when the request's context ends). Two kinds of refusal are limited
// per person (authz.CrossSiteDenials, one allowance for both): when the
// browser says another site started the request (authz.CrossSite), the
// person may only have followed a link, and the reason says so; a person
// who holds no role is refused every page, and a browser left open on one
// must not grow the permanent log without end. One over the limit is not
// written, and the next that is counts it. The answer is the same either
// way. A client that only claims to come from another site (curl sets any
// header) is still audited, under the same limit.
func (s *Server) appendDenied(c echo.Context, events ...audit.Event) {
	if len(events) == 0 {
		return
	}
	site, cross := c.Request().Header.Get("Sec-Fetch-Site"), authz.CrossSite(c.Request())
	if cross || len(s.deps.Access.Roles(userOf(c))) == 0 {
		admitted := s.crossSiteDenials.Allow(crossSitePerson(events[0].Actor), time.Now())
		if !admitted.Write {
			return
		}
		for i := range events {
			if cross {
				events[i].Reason += "; started by another site: the browser's Sec-Fetch-Site said " + authz.ClientText(site, 32)
			}
		}
		noteLimited(events, admitted)
	}
	if _, err := audit.AppendBatchFunc(c.Request().Context(), s.deps.Pool, events); err != nil {
		s.deps.Log.Error("audit denied access", "err", err)
	}
}

// event starts an audit event with the request's actor and metadata: the
// server's own request id (never the client's) and the client address as
// clientIP decides it. The audit package bounds every field.
func (s *Server) event(c echo.Context, action string, outcome audit.Outcome) audit.Event {
	return audit.Event{
		Actor:       userOf(c).Actor,
		Action:      action,
		Outcome:     outcome,
		RequestMeta: authz.RequestMeta(c),
	}
}

// noteLimited adds to the rows of one limited refusal (another site
// started it, or the person holds no role), events, what the per-person
// limit decided (authz.CrossSiteDenials.Allow): how many such refusals of
// the person it left unwritten since the last such row, if any, and, when
// this row spends the person's allowance, that their next ones are
// counted, not written, until it refills.
func noteLimited(events []audit.Event, a authz.Admission) {
	var note string
	if a.Unwritten > 0 {
		note += fmt.Sprintf("; %d more refusals of this person over the limit (started by another site, or without a role) "+
			"since the last such row were not written", a.Unwritten)
	}
	if a.Spent {
		note += "; this row reaches the per-person limit of such refusals (10, then one a minute): " +
			"the next ones are counted, not written, and the next such row written says how many"
	}
	for i := range events {
		events[i].Reason += note
	}
}
