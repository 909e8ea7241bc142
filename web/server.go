package web

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// Config is what the HTTP layer needs to know about its deployment.
type Config struct {
	Version string
	// FormTargets are origins, besides our own, that forms may lead to
	// (the identity provider's, for sign-out redirects). Space-separated.
	FormTargets string
}

// Deps are everything the handlers use. Nothing is read from globals.
type Deps struct {
	Pool        *pgxpool.Pool
	NATS        *nats.Conn
	Gatherer    prometheus.Gatherer
	Log         *slog.Logger
	Config      Config
	Sessions    *scs.SessionManager
	Login       *authz.Login
	Access      *authz.Access
	Bindings    *authz.Bindings
	DeadLetters *dlq.Store
	Replays     *replay.Service // replay requests, approvals and the policy table in force
	PolicyFile  string          // where the policy table was loaded from, for the policy page
}

// Server holds the dependencies of the handlers.
type Server struct {
	deps Deps
	echo *echo.Echo
}

// New returns the console's HTTP handler: security headers, cross-origin
// protection for every unsafe method, sessions, then echo with every route
// of Routes behind the route table's enforcement.
func New(d Deps) http.Handler {
	s := &Server{deps: d}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(middleware.RequestID())
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisablePrintStack: true}))
	for _, r := range s.Routes() {
		e.Add(r.Method, r.Path, r.Handler, s.enforce(r))
	}
	s.echo = e
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(s.crossOriginDenied))
	var targets string
	if d.Config.FormTargets != "" {
		targets = " " + strings.TrimSpace(d.Config.FormTargets)
	}
	return securityHeaders(d.Sessions.LoadAndSave(cop.Handler(e)), targets)
}

func (s *Server) healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// readyz answers 200 when PostgreSQL answers a query and the NATS
// connection is up, 503 naming what is not.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	var problems []string
	if err := s.deps.Pool.Ping(ctx); err != nil {
		problems = append(problems, "postgresql: "+err.Error())
	}
	if s.deps.NATS == nil || !s.deps.NATS.IsConnected() {
		problems = append(problems, "nats: not connected")
	}
	if len(problems) > 0 {
		s.deps.Log.Warn("not ready", "problems", problems)
		return c.JSON(http.StatusServiceUnavailable, map[string]any{"ready": false, "problems": problems})
	}
	return c.JSON(http.StatusOK, map[string]any{"ready": true})
}

func (s *Server) metrics() echo.HandlerFunc {
	return echo.WrapHandler(promhttp.HandlerFor(s.deps.Gatherer, promhttp.HandlerOpts{}))
}

// knownTenants are the tenants that have dead letters; scopes add the
// tenants a user holds roles in.
func (s *Server) knownTenants(ctx context.Context) []string {
	ts, err := s.deps.DeadLetters.Tenants(ctx)
	if err != nil {
		s.deps.Log.Warn("list tenants", "err", err)
	}
	return ts
}
