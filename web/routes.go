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

// Route is one entry of the route table.
type Route struct {
	Method  string
	Path    string
	Access  Access
	Perm    Permission // for AccessPerm
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

// Routes is the one list of every route the console serves, with what each
// requires. Middleware enforces it (enforce); handlers that load an object
// also check the object's tenant, answering 404 for another tenant's.
func (s *Server) Routes() []Route {
	routes := []Route{
		pub(http.MethodGet, "/healthz", s.healthz),
		pub(http.MethodGet, "/readyz", s.readyz),
		pub(http.MethodGet, "/metrics", s.metrics()),
		pub(http.MethodGet, "/static/*", StaticHandler()),
		pub(http.MethodGet, "/auth/login", s.login),
		pub(http.MethodGet, "/auth/callback", s.callback),
		pub(http.MethodGet, "/signed-out", s.signedOut),

		signedIn(http.MethodPost, "/auth/logout", s.logout),
		signedIn(http.MethodGet, "/", s.home),

		perm(http.MethodGet, "/audit", authz.ObjAudit, authz.ActRead, s.auditList),
		perm(http.MethodGet, "/audit/export.csv", authz.ObjAudit, authz.ActExport, s.auditExportCSV),
		perm(http.MethodGet, "/audit/export.jsonl", authz.ObjAudit, authz.ActExport, s.auditExportJSONL),
		perm(http.MethodGet, "/audit/:seq", authz.ObjAudit, authz.ActRead, s.auditEvent),

		perm(http.MethodGet, "/admin/bindings", authz.ObjBindings, authz.ActRead, s.bindingList),
		perm(http.MethodPost, "/admin/bindings", authz.ObjBindings, authz.ActManage, s.bindingAdd),
		perm(http.MethodPost, "/admin/bindings/:id/delete", authz.ObjBindings, authz.ActManage, s.bindingDelete),
	}
	// Each area of the console lists its routes in its own file.
	routes = append(routes, s.triageRoutes()...)
	routes = append(routes, s.replayRoutes()...)
	return routes
}
