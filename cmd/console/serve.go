package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
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
	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/web"
)

type serveConfig struct {
	Addr             string
	DatabaseURL      string
	NATSURL          string
	NATSEmbeddedAddr string
	NATSEmbeddedDir  string
	Prefix           string
	Stream           string
	Watch            []dlq.WatchStream
	Replicas         int
	BatchSize        int
	IngestWorkers    int
	BatchWait        time.Duration
	AckWait          time.Duration
	DBWait           time.Duration
	LogLevel         string
	LogFormat        string
	PublicURL        string
	OIDC             authz.OIDCConfig
	OIDCWait         time.Duration
	IdleTimeout      time.Duration
	Lifetime         time.Duration
	Groups           authz.GroupMap
	Replay           replayConfig
}

func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	var c serveConfig
	var watch string
	s := newSettings("serve", getenv, stderr)
	s.str(&c.Addr, "addr", "CONSOLE_ADDR", "127.0.0.1:8080", "HTTP listen address", checkAddr)
	s.str(&c.DatabaseURL, "database-url", "DATABASE_URL", "", "PostgreSQL connection string", checkPostgresURL)
	s.str(&c.NATSURL, "nats-url", "NATS_URL", "", "NATS server URLs; empty starts an embedded server", checkNATSURL)
	s.str(&c.NATSEmbeddedAddr, "nats-embedded-addr", "NATS_EMBEDDED_ADDR", "127.0.0.1:4222", "listen address of the embedded NATS server", checkAddr)
	s.str(&c.NATSEmbeddedDir, "nats-embedded-dir", "NATS_EMBEDDED_DIR", ".data/nats", "JetStream storage of the embedded NATS server", nil)
	s.str(&c.Prefix, "dlq-prefix", "DLQ_SUBJECT_PREFIX", dlq.DefaultSubjectPrefix, "subject prefix of dead letters: <prefix>.<tenant>.<item_type>", checkToken)
	s.str(&c.Stream, "dlq-stream", "DLQ_STREAM", "DLQ", "JetStream stream holding dead letters", checkStreamName)
	s.str(&watch, "watch-streams", "DLQ_WATCH_STREAMS", "", "streams whose MAX_DELIVERIES/MSG_TERMINATED advisories are captured: STREAM[:template],...", func(v string) error {
		var err error
		c.Watch, err = dlq.ParseWatchStreams(v)
		return err
	})
	s.integer(&c.Replicas, "replicas", "DLQ_REPLICAS", 1, "replicas of the streams the console creates", 1, 5)
	s.integer(&c.BatchSize, "ingest-batch", "INGEST_BATCH_SIZE", 1000, "dead letters per insert", 1, 10000)
	s.integer(&c.IngestWorkers, "ingest-workers", "INGEST_WORKERS", 2, "concurrent insert workers", 1, 64)
	s.duration(&c.BatchWait, "ingest-wait", "INGEST_MAX_WAIT", 50*time.Millisecond, "longest a dead letter waits for its batch", time.Millisecond, 10*time.Second)
	s.duration(&c.AckWait, "ingest-ack-wait", "INGEST_ACK_WAIT", time.Minute, "redelivery of dead letters a stopped ingester did not ack", time.Second, time.Hour)
	s.duration(&c.DBWait, "db-wait", "DATABASE_WAIT", 30*time.Second, "how long to wait for PostgreSQL at start", 0, 10*time.Minute)
	s.str(&c.LogLevel, "log-level", "LOG_LEVEL", "info", "debug, info, warn or error", checkLogLevel)
	s.str(&c.LogFormat, "log-format", "LOG_FORMAT", "text", "text or json", checkOneOf("text", "json"))
	s.str(&c.PublicURL, "public-url", "CONSOLE_PUBLIC_URL", "", "URL people use to reach the console; default http://<addr>; https makes cookies Secure", checkOptionalHTTPURL)
	s.str(&c.OIDC.Issuer, "oidc-issuer", "OIDC_ISSUER", "", "OpenID Connect issuer URL of the identity provider", checkRequiredHTTPURL)
	s.str(&c.OIDC.ClientID, "oidc-client-id", "OIDC_CLIENT_ID", "", "client id registered at the identity provider", checkRequired)
	s.str(&c.OIDC.ClientSecret, "oidc-client-secret", "OIDC_CLIENT_SECRET", "", "client secret", nil)
	s.str(&c.OIDC.RedirectURL, "oidc-redirect-url", "OIDC_REDIRECT_URL", "", "callback URL registered at the provider; default <public url>/auth/callback", checkOptionalHTTPURL)
	s.str(&c.OIDC.GroupsClaim, "oidc-groups-claim", "OIDC_GROUPS_CLAIM", "groups", "ID token claim holding the user's groups", checkRequired)
	s.duration(&c.OIDCWait, "oidc-wait", "OIDC_WAIT", 30*time.Second, "how long to wait for the identity provider at start", 0, 10*time.Minute)
	s.duration(&c.IdleTimeout, "session-idle-timeout", "SESSION_IDLE_TIMEOUT", time.Hour, "sign out after this long without a request", time.Minute, 7*24*time.Hour)
	s.duration(&c.Lifetime, "session-lifetime", "SESSION_LIFETIME", 12*time.Hour, "sign out this long after sign-in", time.Minute, 30*24*time.Hour)
	var groups string
	s.str(&groups, "group-roles", "AUTHZ_GROUP_ROLES", "", "extra group mappings: group=tenant:role[,tenant:role];... (groups named tenant:role map without this)", func(v string) error {
		var err error
		c.Groups, err = authz.ParseGroupMap(v)
		return err
	})
	s.replay(&c.Replay, 2)
	if err := s.parse(args); err != nil {
		return c, err
	}
	c.Replay.Groups = c.Groups
	if c.PublicURL == "" {
		c.PublicURL = "http://" + c.Addr
	}
	c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	if c.OIDC.RedirectURL == "" {
		c.OIDC.RedirectURL = c.PublicURL + "/auth/callback"
	}
	c.OIDC.PostLogoutURL = c.PublicURL + "/signed-out"
	return c, nil
}

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseServe(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	a, err := newApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	fmt.Fprintf(stdout, "console %s listening on http://%s (NATS %s)\n", version, a.listener.Addr(), a.natsURL)
	return a.Run(ctx)
}

// app is the wired console: what serve runs and what tests start the same way.
type app struct {
	cfg      serveConfig
	log      *slog.Logger
	pool     *pgxpool.Pool
	embedded *server.Server
	natsURL  string
	nc       *nats.Conn
	js       jetstream.JetStream
	reg      *prometheus.Registry
	ingester *dlq.Ingester
	access   *authz.Access
	replay   *replayParts
	stopSess func()
	listener net.Listener
	http     *http.Server
}

func newApp(ctx context.Context, cfg serveConfig, log *slog.Logger) (_ *app, err error) {
	a := &app{cfg: cfg, log: log, reg: prometheus.NewRegistry()}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	a.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	if a.pool, err = openPool(ctx, cfg.DatabaseURL, cfg.DBWait, log); err != nil {
		return nil, err
	}
	if err := migrate(ctx, a.pool, log); err != nil {
		return nil, err
	}
	if err := a.connectNATS(); err != nil {
		return nil, err
	}
	store := dlq.NewStore(a.pool)
	a.ingester = dlq.NewIngester(dlq.IngestConfig{
		Prefix: cfg.Prefix, Stream: cfg.Stream, Replicas: cfg.Replicas, BatchSize: cfg.BatchSize,
		MaxWait: cfg.BatchWait, Workers: cfg.IngestWorkers, Watch: cfg.Watch, AckWait: cfg.AckWait,
	}, a.js, store, dlq.NewMetrics(a.reg), log)
	if err := a.ingester.Setup(ctx); err != nil {
		return nil, err
	}
	a.reg.MustRegister(dlq.NewDepthCollector(store, log))

	sessions, stop := authz.NewSessions(a.pool, authz.SessionConfig{
		Secure: strings.HasPrefix(cfg.PublicURL, "https://"), IdleTimeout: cfg.IdleTimeout, Lifetime: cfg.Lifetime,
	})
	a.stopSess = stop
	if a.access, err = authz.NewAccess(ctx, a.pool, cfg.Groups, log); err != nil {
		return nil, err
	}
	if a.replay, err = newReplayParts(ctx, cfg.Replay, a.pool, a.nc, a.js, a.access, log); err != nil {
		return nil, err
	}
	login, err := authz.NewLogin(ctx, cfg.OIDC, cfg.OIDCWait, sessions, a.pool, log)
	if err != nil {
		return nil, err
	}
	login.RememberIn(authz.NewDirectory(a.pool))
	handler := web.New(web.Deps{
		Pool: a.pool, NATS: a.nc, Gatherer: a.reg, Log: log,
		Config:   web.Config{Version: version, FormTargets: originOf(cfg.OIDC.Issuer)},
		Sessions: sessions, Login: login, Access: a.access, Bindings: authz.NewBindings(a.pool), DeadLetters: store,
		Replays: a.replay.replays, PolicyFile: cfg.Replay.PolicyFile,
	})
	a.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      5 * time.Minute, // exports stream for a while
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if a.listener, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("CONSOLE_ADDR %s: %w", cfg.Addr, err)
	}
	return a, nil
}

// openPool connects to PostgreSQL, waiting up to wait for it to answer.
func openPool(ctx context.Context, dsn string, wait time.Duration, log *slog.Logger) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if _, set := pc.ConnConfig.RuntimeParams["pool_max_conns"]; !set && pc.MaxConns < 20 {
		pc.MaxConns = 20
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = pool.Ping(pctx)
		cancel()
		if err == nil {
			return pool, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			pool.Close()
			return nil, fmt.Errorf("PostgreSQL at DATABASE_URL did not answer: %w", err)
		}
		log.Warn("waiting for PostgreSQL", "err", err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
}

func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	v, err := migrations.Migrate(ctx, conn.Conn())
	if err != nil {
		return err
	}
	log.Info("database schema ready", "version", v)
	return nil
}

func (a *app) connectNATS() error {
	a.natsURL = a.cfg.NATSURL
	if a.natsURL == "" {
		host, portStr, _ := net.SplitHostPort(a.cfg.NATSEmbeddedAddr) // validated
		port, _ := strconv.Atoi(portStr)
		if err := os.MkdirAll(a.cfg.NATSEmbeddedDir, 0o750); err != nil {
			return fmt.Errorf("NATS_EMBEDDED_DIR: %w", err)
		}
		ns, err := server.NewServer(&server.Options{
			ServerName: "quarantine-embedded", Host: host, Port: port, JetStream: true,
			StoreDir: a.cfg.NATSEmbeddedDir, NoSigs: true, MaxPayload: 8 << 20,
		})
		if err != nil {
			return fmt.Errorf("embedded NATS: %w", err)
		}
		go ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			ns.Shutdown()
			return fmt.Errorf("embedded NATS did not start on %s (NATS_EMBEDDED_ADDR)", a.cfg.NATSEmbeddedAddr)
		}
		a.embedded = ns
		a.natsURL = ns.ClientURL()
		a.log.Info("started embedded NATS", "url", a.natsURL, "store", a.cfg.NATSEmbeddedDir)
	}
	nc, err := nats.Connect(a.natsURL,
		nats.Name("quarantine-console"),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { a.log.Warn("NATS disconnected", "err", err) }),
		nats.ReconnectHandler(func(c *nats.Conn) { a.log.Info("NATS reconnected", "url", c.ConnectedUrl()) }),
	)
	if err != nil {
		return fmt.Errorf("NATS_URL %s: %w", a.natsURL, err)
	}
	a.nc = nc
	if a.js, err = jetstream.New(nc); err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	return nil
}

// Run serves HTTP and ingests until ctx ends, then shuts down gracefully.
func (a *app) Run(ctx context.Context) error {
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
	wg.Go(func() { a.access.Watch(ctx) })
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

// Close releases connections and stops the embedded server.
func (a *app) Close() {
	if a.stopSess != nil {
		a.stopSess()
	}
	if a.nc != nil {
		_ = a.nc.Drain()
	}
	if a.embedded != nil {
		a.embedded.Shutdown()
		a.embedded.WaitForShutdown()
	}
	if a.pool != nil {
		a.pool.Close()
	}
}
