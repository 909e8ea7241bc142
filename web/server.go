package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config is what the HTTP layer needs to know about its deployment.
type Config struct {
	Version string
}

// Deps are everything the handlers use. Nothing is read from globals.
type Deps struct {
	Pool     *pgxpool.Pool
	NATS     *nats.Conn
	Gatherer prometheus.Gatherer
	Log      *slog.Logger
	Config   Config
}

// Server holds the dependencies of the handlers.
type Server struct {
	deps Deps
}

// New returns the echo instance serving every route of routes().
func New(d Deps) *echo.Echo {
	s := &Server{deps: d}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	for _, r := range s.routes() {
		e.Add(r.Method, r.Path, r.Handler)
	}
	return e
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
