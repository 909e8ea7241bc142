package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
)

// Access is what a route requires of the caller.
type Access int

// Kinds of access a route declares.
const (
	AccessPublic   Access = iota // anyone: probes, metrics, static files, the sign-in flow
	AccessSignedIn               // any signed-in person, even one without a role
	AccessPerm                   // a signed-in person holding Perm in at least one tenant
)

// Permission is an action on an object of the authorization model.
type Permission struct {
	Object string
	Action string
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
	// NamedTenant: a form field names the tenant (a role binding); outside
	// the caller's scope the route answers 403, audited.
	NamedTenant
	// ObjectTenant: the path names one object; Locate finds its tenant
	// before the handler runs, and another tenant's object answers 404,
	// audited, exactly like a missing one.
	ObjectTenant
	// SelectedTenants: the form names dead letters; Locate finds their
	// tenants, the ones outside the caller's scope are audited as refused
	// and the action never sees them.
	SelectedTenants
)

// Route is one entry of the route table.
type Route struct {
	Method  string
	Path    string
	Access  Access
	Perm    Permission // for AccessPerm
	Tenancy Tenancy
	Locate  *Locator // for ObjectTenant and SelectedTenants
	Handler echo.HandlerFunc
}

func pub(method, path string, h echo.HandlerFunc) Route {
	return Route{Method: method, Path: path, Access: AccessPublic, Handler: h}
}

func signedIn(method, path string, h echo.HandlerFunc) Route {
	return Route{Method: method, Path: path, Access: AccessSignedIn, Handler: h}
}

func perm(method, path, obj, act string, h echo.HandlerFunc) Route {
	return Route{Method: method, Path: path, Access: AccessPerm, Perm: Permission{obj, act}, Handler: h}
}

// global declares that r touches nothing of a tenant.
func (r Route) global() Route { r.Tenancy = NoTenant; return r }

// lists declares that r reads only the caller's tenants.
func (r Route) lists() Route { r.Tenancy = CallerTenants; return r }

// names declares that a form field of r names the tenant.
func (r Route) names() Route { r.Tenancy = NamedTenant; return r }

// of declares that r's path names an object that loc finds.
func (r Route) of(loc *Locator) Route { r.Tenancy, r.Locate = ObjectTenant, loc; return r }

// selects declares that r's form names dead letters that loc finds.
func (r Route) selects(loc *Locator) Route { r.Tenancy, r.Locate = SelectedTenants, loc; return r }

// Routes is the one list of every route the console serves, with what each
// requires and how it finds the tenant of what it touches. Middleware
// enforces both (enforce).
func (s *Server) Routes() []Route {
	routes := []Route{
		pub(http.MethodGet, "/healthz", s.healthz).global(),
		pub(http.MethodGet, "/readyz", s.readyz).global(),
		pub(http.MethodGet, "/metrics", s.metrics()).global(),
		pub(http.MethodGet, "/static/*", StaticHandler()).global(),
		pub(http.MethodGet, "/auth/login", s.login).global(),
		pub(http.MethodGet, "/auth/callback", s.callback).global(),
		pub(http.MethodGet, "/signed-out", s.signedOut).global(),

		signedIn(http.MethodPost, "/auth/logout", s.logout).global(),
		signedIn(http.MethodGet, "/", s.home).lists(),

		perm(http.MethodGet, "/audit", authz.ObjAudit, authz.ActRead, s.auditList).lists(),
		perm(http.MethodGet, "/audit/export.csv", authz.ObjAudit, authz.ActExport, s.auditExportCSV).lists(),
		perm(http.MethodGet, "/audit/export.jsonl", authz.ObjAudit, authz.ActExport, s.auditExportJSONL).lists(),
		perm(http.MethodGet, "/audit/:seq", authz.ObjAudit, authz.ActRead, s.auditEvent).of(s.auditLocator()),

		perm(http.MethodGet, "/admin/bindings", authz.ObjBindings, authz.ActRead, s.bindingList).lists(),
		perm(http.MethodPost, "/admin/bindings", authz.ObjBindings, authz.ActManage, s.bindingAdd).names(),
		perm(http.MethodPost, "/admin/bindings/:id/delete", authz.ObjBindings, authz.ActManage, s.bindingDelete).of(s.bindingLocator()),
	}
	// Each area of the console lists its routes in its own file.
	routes = append(routes, s.triageRoutes()...)
	routes = append(routes, s.replayRoutes()...)
	return routes
}
