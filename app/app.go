// Package app wires the console: PostgreSQL (migrated), NATS (an embedded
// server, or the given ones), the ingester, sign-in and permissions, the
// replay service and workers, and the HTTP handler. New builds it exactly
// as `console serve` runs it, Run serves until its context ends and Close
// lets go of everything; cmd/console, the tests' testfactory.Console and,
// through the console binary, the e2e tests all start it this way.
// NewWorkers is the same for `console worker`.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/web"
)

// Config is everything `console serve` is told (README, Configuration).
type Config struct {
	Version          string // shown in the page footer
	Addr             string // HTTP listen address; port 0 picks a free one
	DatabaseURL      string
	DBWait           time.Duration // how long to wait for PostgreSQL at start
	NATSURL          string        // comma-separated; empty starts an embedded server
	NATSEmbeddedAddr string
	NATSEmbeddedDir  string
	Prefix           string // dead letters arrive on <Prefix>.<tenant>.<item_type>
	Stream           string
	Watch            []dlq.WatchStream
	Replicas         int
	BatchSize        int
	IngestWorkers    int
	BatchWait        time.Duration
	AckWait          time.Duration
	// PublicURL is the URL people use; empty: http://<the listener's
	// address>. An https URL makes the session cookie Secure.
	PublicURL string
	// OIDC is the identity provider; an empty RedirectURL is
	// <PublicURL>/auth/callback, an empty PostLogoutURL <PublicURL>/signed-out.
	OIDC        authz.OIDCConfig
	OIDCWait    time.Duration
	IdleTimeout time.Duration
	Lifetime    time.Duration
	Groups      authz.GroupMap
	Replay      ReplayConfig
}

// App is the wired console. Its exported fields are for the tests' own
// checks and for wiring more parts; Run and Close do the rest.
type App struct {
	Pool      *pgxpool.Pool
	NATS      *nats.Conn
	JetStream jetstream.JetStream
	Store     *dlq.Store
	Access    *authz.Access
	Replays   *replay.Service
	Handler   http.Handler // the console's HTTP handler, as the server serves it

	cfg      Config
	log      *slog.Logger
	embedded *server.Server
	natsURL  string
	reg      *prometheus.Registry
	ingester *dlq.Ingester
	replay   *replayParts
	stopSess func()
	listener net.Listener
	http     *http.Server
}

// New connects, migrates and wires everything cfg describes, and listens
// on cfg.Addr; nothing runs until Run. On error it has released what it
// took.
func New(ctx context.Context, cfg Config, log *slog.Logger) (_ *App, err error) {
	a := &App{cfg: cfg, log: log, reg: prometheus.NewRegistry()}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	a.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if a.Pool, err = OpenPool(ctx, cfg.DatabaseURL, cfg.DBWait, log); err != nil {
		return nil, err
	}
	if err := Migrate(ctx, a.Pool, log); err != nil {
		return nil, err
	}
	if err := a.connectNATS(); err != nil {
		return nil, err
	}
	a.Store = dlq.NewStore(a.Pool)
	a.ingester = dlq.NewIngester(dlq.IngestConfig{
		Prefix: cfg.Prefix, Stream: cfg.Stream, Replicas: cfg.Replicas, BatchSize: cfg.BatchSize,
		MaxWait: cfg.BatchWait, Workers: cfg.IngestWorkers, Watch: cfg.Watch, AckWait: cfg.AckWait,
	}, a.JetStream, a.Store, dlq.NewMetrics(a.reg), log)
	if err := a.ingester.Setup(ctx); err != nil {
		return nil, err
	}
	a.reg.MustRegister(dlq.NewDepthCollector(a.Store, log))
	if a.listener, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("CONSOLE_ADDR %s: %w", cfg.Addr, err)
	}
	a.cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	if a.cfg.PublicURL == "" {
		a.cfg.PublicURL = a.URL()
	}
	if a.cfg.OIDC.RedirectURL == "" {
		a.cfg.OIDC.RedirectURL = a.cfg.PublicURL + "/auth/callback"
	}
	if a.cfg.OIDC.PostLogoutURL == "" {
		a.cfg.OIDC.PostLogoutURL = a.cfg.PublicURL + "/signed-out"
	}
	sessions, stop := authz.NewSessions(a.Pool, authz.SessionConfig{
		Secure: strings.HasPrefix(a.cfg.PublicURL, "https://"), IdleTimeout: cfg.IdleTimeout, Lifetime: cfg.Lifetime,
	})
	a.stopSess = stop
	if a.Access, err = authz.NewAccess(ctx, a.Pool, cfg.Groups, log); err != nil {
		return nil, err
	}
	if a.replay, err = newReplayParts(ctx, cfg.Replay, a.Pool, a.NATS, a.JetStream, a.Access, log); err != nil {
		return nil, err
	}
	a.Replays = a.replay.service
	login, err := authz.NewLogin(ctx, a.cfg.OIDC, cfg.OIDCWait, sessions, a.Pool, log)
	if err != nil {
		return nil, err
	}
	login.RememberIn(authz.NewDirectory(a.Pool))
	a.Handler = web.New(web.Deps{
		Pool: a.Pool, NATS: a.NATS, Gatherer: a.reg, Log: log,
		Config:   web.Config{Version: cfg.Version, FormTargets: originOf(cfg.OIDC.Issuer)},
		Sessions: sessions, Login: login, Access: a.Access, Bindings: authz.NewBindings(a.Pool), DeadLetters: a.Store,
		Replays: a.Replays, PolicyFile: cfg.Replay.PolicyFile,
	})
	a.http = &http.Server{
		Handler:           a.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      5 * time.Minute, // exports stream for a while
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return a, nil
}

// URL is where the console listens: http://<address of the listener>.
func (a *App) URL() string { return "http://" + a.listener.Addr().String() }

// NATSURL is the NATS the console uses (the embedded server's when it
// started one).
func (a *App) NATSURL() string { return a.natsURL }

// Run serves HTTP, ingests, keeps the permissions current and runs the
// replay workers until ctx ends (or one of them fails), then shuts down
// gracefully.
func (a *App) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() {
		if err := a.ingester.Run(ctx); err != nil {
			errs <- fmt.Errorf("ingester: %w", err)
			cancel()
		}
	})
	wg.Go(func() { a.Access.Watch(ctx) })
	wg.Go(func() { a.replay.run(ctx) })
	wg.Go(func() {
		if err := a.http.Serve(a.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("http: %w", err)
			cancel()
		}
	})
	<-ctx.Done()
	a.log.Info("shutting down")
	sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer scancel()
	if err := a.http.Shutdown(sctx); err != nil {
		a.log.Warn("http shutdown", "err", err)
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when closed and empty
}

// Close releases connections and stops the embedded server. Call it after
// Run returned (or instead of Run).
func (a *App) Close() {
	if a.listener != nil && a.http == nil {
		_ = a.listener.Close() // New failed after listening
	}
	if a.stopSess != nil {
		a.stopSess()
	}
	if a.NATS != nil {
		_ = a.NATS.Drain()
	}
	if a.embedded != nil {
		a.embedded.Shutdown()
		a.embedded.WaitForShutdown()
	}
	if a.Pool != nil {
		a.Pool.Close()
	}
}

// originOf returns scheme://host of u, or "" when u does not parse.
func originOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return ""
	}
	return p.Scheme + "://" + p.Host
}
