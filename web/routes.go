package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Access is what a route requires of the caller.
type Access int

// Kinds of access a route declares.
const (
	AccessPublic   Access = iota // anyone: probes, metrics, static files, the sign-in flow and the sign-out
	AccessSignedIn               // any signed-in person, even one without a role
	AccessPerm                   // a signed-in person holding Perm in at least one tenant
)

// Permission is an action on an object of the authorization model. An
// object that ends in ":*" names a family ("replay:*": the replays of every
// policy class): a route of it lets through whoever holds the action on
// any member somewhere (a line "replay:rebuildable request" is enough to
// reach the replay routes), and its handler checks the member it touches
// (the class of the request or the dead letters).
type Permission struct {
	Object string
	Action string
}

// Objects are the objects p stands for: the members of its family (every
// replay class), or its one object.
func (p Permission) Objects() []string {
	if p.Object != replayObjects {
		return []string{p.Object}
	}
	var out []string
	for _, c := range replaypolicy.KnownClasses() {
		out = append(out, authz.ReplayObject(string(c)))
	}
	return out
}

// PermittedSomewhere reports whether u holds p in at least one tenant: the
// action on its object, or on any member of its family.
func PermittedSomewhere(a *authz.Access, u authz.User, p Permission) bool {
	for _, obj := range p.Objects() {
		if a.CanSomewhere(u, obj, p.Action, nil) {
			return true
		}
	}
	return false
}

// Tenancy is how a route finds the tenant of what it touches. Every route
// declares one; the zero value is none, which TestEveryRouteIsTenantScoped
// refuses.
type Tenancy int

// Tenancies a route declares.
const (
	TenancyUndeclared Tenancy = iota
	// NoTenant: the route touches nothing of a tenant (probes, static
	// files, the sign-in flow, the policy table).
	NoTenant
	// CallerTenants: the route lists or counts only what the caller's
	// tenants hold; its query is restricted to them.
	CallerTenants
	// NamedTenant: a form field names the tenant (a role binding, an error
	// group, an emergency stop); outside the caller's scope the route
	// answers 404 when the caller holds no role there (as for another
	// tenant's object: the name says nothing of whether the tenant exists),
	// 403 when they do, audited either way (refuseNamed).
	NamedTenant
	// ObjectTenant: the path names one object; Locate finds its tenant
	// before the handler runs, and another tenant's object answers 404,
	// audited, exactly like a missing one.
	ObjectTenant
	// SelectedTenants: the form names dead letters; Locate finds their
	// tenants, the ones outside the caller's scope are audited as refused
	// and the action never sees them.
	SelectedTenants
	// EveryTenant: the route acts beyond any one tenant (a person's
	// sessions reach every tenant they may see): only people who hold its
	// permission in every tenant may call it; others get 403, audited.
	EveryTenant
)

// Route is one entry of the route table.
type Route struct {
	Method  string
	Path    string
	Access  Access
	Perm    Permission // for AccessPerm
	Tenancy Tenancy
	Locate  *Locator  // for ObjectTenant and SelectedTenants
	Body    BodyClass // how large a body it reads (body_limit.go)
	// Writes marks a GET that writes (an audit row under the caller): a
	// request the browser says another site started is refused before
	// anything is read or written (fetchmeta.go). POSTs need no mark:
	// every one is checked (http.CrossOriginProtection). The GETs that
	// write are the audited downloads, which set it (downloads).
	Writes bool
	// Download is what a GET that sends a file sends (an export, a
	// payload, a dead letter's whole error, headers or stack trace): how
	// many may run at once is bounded by its kind (download_limit.go),
	// whether or not it writes (sends; downloads for one that does).
	Download DownloadKind
	// Starts says, for a GET that writes, what it starts ("Download the
	// payload of dead letter 17"): the refusal of one another site started
	// names it on its "start it again" button (fetchmeta.go).
	Starts  func(echo.Context) string
	Handler echo.HandlerFunc
}

// bodyFor is the body class of a method: GET reads none, the rest a form.
func bodyFor(method string) BodyClass {
	if method == http.MethodGet {
		return BodyNone
	}
	return BodyForm
}

func pub(method, path string, h echo.HandlerFunc) Route {
	return Route{Method: method, Path: path, Access: AccessPublic, Body: bodyFor(method), Handler: h}
}

func signedIn(method, path string, h echo.HandlerFunc) Route {
	return Route{Method: method, Path: path, Access: AccessSignedIn, Body: bodyFor(method), Handler: h}
}

func perm(method, path, obj, act string, h echo.HandlerFunc) Route {
	return Route{Method: method, Path: path, Access: AccessPerm, Perm: Permission{obj, act}, Body: bodyFor(method), Handler: h}
}

// reads declares how large a body r reads (the method's class otherwise).
func (r Route) reads(b BodyClass) Route { r.Body = b; return r }

// startsText is what r starts (Starts), "" when it does not say.
func (r Route) startsText(c echo.Context) string {
	if r.Starts == nil {
		return ""
	}
	return r.Starts(c)
}

// global declares that r touches nothing of a tenant.
func (r Route) global() Route { r.Tenancy = NoTenant; return r }

// lists declares that r reads only the caller's tenants.
func (r Route) lists() Route { r.Tenancy = CallerTenants; return r }

// names declares that a form field of r names the tenant.
func (r Route) names() Route { r.Tenancy = NamedTenant; return r }

// of declares that r's path names an object that loc finds.
func (r Route) of(loc *Locator) Route { r.Tenancy, r.Locate = ObjectTenant, loc; return r }

// everyTenant declares that r needs its permission in every tenant.
func (r Route) everyTenant() Route { r.Tenancy = EveryTenant; return r }

// sends declares that GET route r sends a file of kind, bounded as such
// (limitDownload), and writes nothing.
func (r Route) sends(kind DownloadKind) Route { r.Download = kind; return r }

// downloads declares that GET route r sends a file of kind (sends), and
// writes (the download's audit row), so another site may not start it;
// starts says what it starts, in words.
func (r Route) downloads(kind DownloadKind, starts func(echo.Context) string) Route {
	r = r.sends(kind)
	r.Writes, r.Starts = true, starts
	return r
}

// selects declares that r's form names dead letters that loc finds.
func (r Route) selects(loc *Locator) Route { r.Tenancy, r.Locate = SelectedTenants, loc; return r }

// Routes is the one list of every route the console serves, with what each
// requires and how it finds the tenant of what it touches. Middleware
// enforces both (enforce).
func (s *Server) Routes() []Route {
	routes := []Route{
		pub(http.MethodGet, "/healthz", s.healthz).global(),
		pub(http.MethodGet, "/readyz", s.readyz).global(),
		pub(http.MethodGet, "/static/*", StaticHandler()).global(),
		pub(http.MethodHead, "/static/*", StaticHandler()).global(),
		pub(http.MethodGet, "/auth/login", s.login).global(),
		pub(http.MethodGet, "/auth/callback", s.callback).global(),
		pub(http.MethodGet, "/signed-out", s.signedOut).global(),
		// A sign-out whose session already ended still signs out
		// (Login.Logout); cross-origin protection applies as to every post.
		pub(http.MethodPost, "/auth/logout", s.logout).global(),

		signedIn(http.MethodGet, "/", s.home).lists(),
		signedIn(http.MethodPost, "/settings/time", s.settingsTime).global(),

		perm(http.MethodGet, "/audit", authz.ObjAudit, authz.ActRead, s.auditList).lists(),
		perm(http.MethodGet, "/audit/export.csv", authz.ObjAudit, authz.ActExport, s.auditExportCSV).lists().downloads(DownloadExport, startsAuditExport("CSV")),
		perm(http.MethodGet, "/audit/export.jsonl", authz.ObjAudit, authz.ActExport, s.auditExportJSONL).lists().downloads(DownloadExport, startsAuditExport("JSON lines")),
		perm(http.MethodGet, "/audit/:seq", authz.ObjAudit, authz.ActRead, s.auditEvent).of(s.auditLocator()),
		perm(http.MethodPost, "/audit/verify", authz.ObjAudit, authz.ActRead, s.auditVerify).everyTenant(),

		perm(http.MethodGet, "/admin/bindings", authz.ObjBindings, authz.ActRead, s.bindingList).lists(),
		perm(http.MethodPost, "/admin/bindings", authz.ObjBindings, authz.ActManage, s.bindingAdd).names(),
		perm(http.MethodPost, "/admin/bindings/:id/delete", authz.ObjBindings, authz.ActManage, s.bindingDelete).of(s.bindingLocator()),
		perm(http.MethodGet, "/admin/sessions", authz.ObjSessions, authz.ActRevoke, s.sessionList).everyTenant(),
		perm(http.MethodPost, "/admin/sessions/revoke", authz.ObjSessions, authz.ActRevoke, s.sessionRevoke).everyTenant(),
	}
	if s.deps.Config.MetricsToken != "" {
		// Otherwise metrics are only on their own listener (MetricsHandler).
		routes = append(routes, pub(http.MethodGet, "/metrics", s.metrics()).global())
	}
	// Each area of the console lists its routes in its own file.
	routes = append(routes, s.triageRoutes()...)
	routes = append(routes, s.replayRoutes()...)
	return routes
}
