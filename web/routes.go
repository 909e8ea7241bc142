package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Permission is what a route requires: an action on an object of the
// authorization model. Public routes need no identity.
type Permission struct {
	Object string
	Action string
}

// Public marks routes anyone may call (probes and metrics, bound to the
// internal listener in production).
var Public = Permission{}

// Route is one entry of the route table.
type Route struct {
	Method  string
	Path    string
	Perm    Permission
	Handler echo.HandlerFunc
}

// routes is the one list of every route the console serves.
func (s *Server) routes() []Route {
	return []Route{
		{http.MethodGet, "/healthz", Public, s.healthz},
		{http.MethodGet, "/readyz", Public, s.readyz},
		{http.MethodGet, "/metrics", Public, s.metrics()},
	}
}
