// Package app wires the console: PostgreSQL (as the runtime role, on a
// schema `console migrate` brought up to date), NATS (an embedded server on
// loopback with a token, or the given ones), the ingester, sign-in and
// permissions, the replay service and workers, the audit checkpointer, and
// the HTTP handler and metrics listener. New builds it exactly
// as `console serve` runs it, Run serves until its context ends and Close
// lets go of everything; cmd/console, the tests' testfactory.Console and,
// through the console binary, the e2e tests all start it this way.
// NewWorkers is the same for `console worker`.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/web"
)

// Config is everything `console serve` is told (README, Configuration).
type Config struct {
	Version string // shown in the page footer
	Addr    string // HTTP listen address; port 0 picks a free one
	// DatabaseURL connects as the runtime role (docs/access.md): New
	// refuses the owner, a superuser, or a schema that is not migrated.
	DatabaseURL string
	DBWait      time.Duration // how long to wait for PostgreSQL at start
	NATSWait    time.Duration // how long to wait at start for NATS to take a connection, then for JetStream to answer
	// StatementTimeout bounds the statements of web requests;
	// WorkerStatementTimeout those of ingest, replay workers and
	// checkpoints (a pool of their own). Zero: 15s and 1m.
	StatementTimeout       time.Duration
	WorkerStatementTimeout time.Duration
	NATSURL                string // comma-separated; empty starts an embedded server
	NATSEmbeddedAddr       string // loopback only
	NATSEmbeddedDir        string
	// NATSTokenFile holds the NATS token; the embedded server writes a new
	// one there when it is missing. Empty: no token (embedded: a random
	// one only this process knows).
	NATSTokenFile string
	Prefix        string // dead letters arrive on <Prefix>.<tenant>.<item_type>
	Stream        string
	Watch         []dlq.WatchStream
	// AdvisoriesTrusted says no client of the NATS account may publish on
	// $JS.EVENT.ADVISORY.>: only then is a give-up captured from an
	// advisory replayable (dlq.IngestConfig.UntrustedAdvisories).
	AdvisoriesTrusted bool
	Replicas          int
	BatchSize         int
	IngestWorkers     int
	BatchWait         time.Duration
	AckWait           time.Duration
	// StallAfter is how long dead letters may wait with none stored and
	// acked by the ingest consumer before the dashboard calls ingest
	// stalled (readiness does not ask); 0 turns the check off.
	StallAfter time.Duration
	// ShutdownDrain is how long, once asked to stop, /readyz answers 503
	// ("shutting down") while the console still serves, before its
	// listener closes: a load balancer that probes readiness takes the
	// replica out first, so requests are not cut off or refused (0: none).
	ShutdownDrain time.Duration
	// StreamMaxAge and StreamMaxBytes are the DLQ stream's limits (0: as
	// the stream has them; a new one has none).
	StreamMaxAge   time.Duration
	StreamMaxBytes int64
	// IngestTuning, when not nil, changes the ingester's configuration
	// last (tests: quicker health checks and retries).
	IngestTuning func(*dlq.IngestConfig)
	// PublicURL is the URL people use; empty: http://<the listener's
	// address>. An https URL (or TLSTerminated) makes the session cookie
	// Secure and sends HSTS.
	PublicURL     string
	TLSTerminated bool
	// TrustedProxies are the networks whose X-Forwarded-For names the client.
	TrustedProxies []*net.IPNet
	// MetricsAddr is the listen address of /metrics ("" or "off": none);
	// MetricsToken, when set, is the bearer token /metrics requires, and
	// /metrics is then also served on Addr.
	MetricsAddr  string
	MetricsToken string
	// AuditSigner signs audit checkpoints (required), every
	// CheckpointEvery entries or CheckpointInterval (defaults 1000, 5m).
	AuditSigner *audit.Signer
	// AuditPublicKeys are the public keys of earlier signing keys: the
	// auditor's "verify chain" trusts them and AuditSigner's own.
	AuditPublicKeys    *audit.KeySet
	CheckpointEvery    int64
	CheckpointInterval time.Duration
	// OIDC is the identity provider; an empty RedirectURL is
	// <PublicURL>/auth/callback, an empty PostLogoutURL <PublicURL>/signed-out.
	OIDC        authz.OIDCConfig
	OIDCWait    time.Duration
	IdleTimeout time.Duration
	Lifetime    time.Duration
	Groups      authz.GroupMap
	Replay      ReplayConfig
	// Keeper says how dead_letters' partitions are made ahead and retention
	// applied; zero fields take dlq.KeeperConfig's defaults.
	Keeper KeeperConfig
	// WebTracer, when not nil, sees every statement of the web pool (the
	// tests count a page's round trips with it).
	WebTracer pgx.QueryTracer
}

// KeeperConfig is the settings of the partition keeper (dlq.KeeperConfig).
type KeeperConfig struct {
	Every     time.Duration // RETENTION_EVERY
	Ahead     int           // PARTITIONS_AHEAD, days
	BatchRows int           // RETENTION_BATCH
	// FoldEvery is how often ingest's deltas are folded into the counters
	// (0: dlq.FoldEvery).
	FoldEvery time.Duration
}

// App is the wired console. Its exported fields are for the tests' own
// checks and for wiring more parts; Run and Close do the rest.
type App struct {
	Pool        *pgxpool.Pool // web requests
	Jobs        *pgxpool.Pool // ingest, replay workers, checkpoints, the policy listener
	NATS        *nats.Conn
	JetStream   jetstream.JetStream
	Store       *dlq.Store
	Access      *authz.Access
	Replays     *replay.Service
	Checkpoints *audit.Checkpointer
	// Denials counts refusals of people not signed in (never audited).
	Denials *authz.AnonymousDenials
	Handler http.Handler // the console's HTTP handler, as the server serves it
	// draining is set once Run is asked to stop: /readyz answers 503.
	draining atomic.Bool

	cfg      Config
	log      *slog.Logger
	embedded *server.Server
	natsURL  string
	// ingestMetrics are ingest's metrics, the counters' folder's too.
	ingestMetrics *dlq.Metrics
	natsEnd       *natsEnd // the connection closed for good: Run stops
	reg           *prometheus.Registry
	ingester      *dlq.Ingester
	keeper        *dlq.Keeper
	replay        *replayParts
	mappings      *authz.MappingWatch
	stopSess      func()
	listener      net.Listener
	http          *http.Server
	metricsL      net.Listener // nil without a metrics listener
	metrics       *http.Server
	// start says what New does, for the probes that its listeners answer
	// until it hands them console and metricsOut's handlers.
	start      web.Start
	console    *web.Handover
	metricsOut *web.Handover // nil without a metrics listener
	serving    sync.WaitGroup
	served     chan error // a listener's Serve failed; Run ends with it
}

// ErrStopped is what New and NewWorkers return when ctx ended while they
// started (a SIGTERM or Ctrl-C while they waited for PostgreSQL, NATS,
// JetStream or the identity provider): a stop asked for, not a failure;
// the command exits 0.
var ErrStopped = errors.New("stopped while starting")

// startEnded is err, the error New or NewWorkers ends with, as ErrStopped
// when ctx has ended: whatever a wait at start was cut short with then
// ("did not answer: context canceled") is the stop, not the service it
// waited for.
func startEnded(ctx context.Context, err error, log *slog.Logger) error {
	if ctx.Err() == nil {
		return err
	}
	log.Info("stopped while starting", "was", err)
	return ErrStopped
}

// New listens on cfg.Addr (and cfg.MetricsAddr) first, answering probes
// as a starting process there (listen), then connects, checks the schema
// and the database role, wires everything cfg describes, and hands the
// listeners to the console's handler and the metrics; nothing else runs
// until Run. On error it has released what it took.
func New(ctx context.Context, cfg Config, log *slog.Logger) (_ *App, err error) {
	a := &App{cfg: cfg, log: log, reg: prometheus.NewRegistry(), served: make(chan error, 2), natsEnd: newNATSEnd()}
	defer func() {
		if err != nil {
			a.Close()
			err = startEnded(ctx, err, log)
		}
	}()
	if cfg.AuditSigner == nil {
		return nil, errors.New("AUDIT_SIGNING_KEY_FILE: a key to sign audit checkpoints is required")
	}
	if err := a.listen(); err != nil {
		return nil, err
	}
	cfg.StatementTimeout = cmp.Or(cfg.StatementTimeout, 15*time.Second)
	cfg.WorkerStatementTimeout = cmp.Or(cfg.WorkerStatementTimeout, time.Minute)
	a.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// Two pools, so a slow page cannot take the connections ingest and the
	// workers need, each with its own statement timeout. A pool_max_conns
	// too small for the background pool is refused before anything
	// connects (pool_size.go).
	jobsPool := backgroundPool(cfg)
	if err := checkMaxConns(cfg.DatabaseURL, jobsPool); err != nil {
		return nil, err
	}
	a.start.Wait("PostgreSQL", "DATABASE_WAIT", cfg.DBWait)
	if a.Pool, err = OpenPool(ctx, cfg.DatabaseURL, cfg.DBWait, PoolConfig{Name: "web", MaxConns: 20, StatementTimeout: cfg.StatementTimeout, Tracer: cfg.WebTracer, GenericPlans: true}, log); err != nil {
		return nil, err
	}
	a.start.Step("checking the database schema and role")
	if err := CheckDatabase(ctx, a.Pool, log); err != nil {
		return nil, err
	}
	a.start.Wait("PostgreSQL", "DATABASE_WAIT", cfg.DBWait)
	if a.Jobs, err = OpenPool(ctx, cfg.DatabaseURL, cfg.DBWait, jobsPool, log); err != nil {
		return nil, err
	}
	a.start.Wait("NATS", "NATS_WAIT", cmp.Or(cfg.NATSWait, time.Minute))
	if err := a.connectNATS(ctx); err != nil {
		return nil, err
	}
	warnServePlainTransport(cfg, a.NATS, log)
	a.start.Step("reading the stored dead letters' counts")
	// One snapshot of the counters per process (scope, filter choices,
	// plans, the partition map), kept fresh by Run on the workers' pool:
	// the web pool serves requests only.
	counters := dlq.NewCounters(a.Jobs, log)
	a.Store = dlq.NewStoreSharing(a.Pool, counters)
	jobStore := dlq.NewStoreSharing(a.Jobs, counters)
	ingest := dlq.IngestConfig{
		Prefix: cfg.Prefix, Stream: cfg.Stream, Replicas: cfg.Replicas, BatchSize: cfg.BatchSize,
		MaxWait: cfg.BatchWait, Workers: cfg.IngestWorkers, Watch: cfg.Watch, WatchGrace: dlq.DefaultWatchGrace, AckWait: cfg.AckWait,
		UntrustedAdvisories: !cfg.AdvisoriesTrusted,
		StallAfter:          cfg.StallAfter, StreamMaxAge: cfg.StreamMaxAge, StreamMaxBytes: cfg.StreamMaxBytes,
		StatementTimeout: cfg.WorkerStatementTimeout, // the Jobs pool's: ingest gives a hung connection up a little after it
	}
	if cfg.StallAfter == 0 {
		ingest.StallAfter = -1 // off (dlq's zero value means its default)
	}
	if cfg.IngestTuning != nil {
		cfg.IngestTuning(&ingest)
	}
	ingestMetrics := dlq.NewMetrics(a.reg)
	a.ingestMetrics = ingestMetrics
	if counts, err := jobStore.Depth(ctx); err != nil {
		log.Warn("ingest metrics: the stored tenants could not be read; label slots go to the first come", "err", err)
	} else {
		ingestMetrics.AdmitStored(counts)
	}
	a.ingester = dlq.NewIngester(ingest, a.JetStream, jobStore, ingestMetrics, log)
	a.start.Wait("JetStream", "NATS_WAIT", cmp.Or(cfg.NATSWait, time.Minute))
	if err := a.ingester.SetupWithin(ctx, cmp.Or(cfg.NATSWait, time.Minute)); err != nil {
		return nil, jetStreamOff(a.natsURL, err)
	}
	a.reg.MustRegister(dlq.NewDepthCollector(jobStore, log), replay.NewMetricsCollector(a.Jobs, log))
	a.Checkpoints = audit.NewCheckpointer(a.Jobs, cfg.AuditSigner, audit.CheckpointConfig{
		Every: cfg.CheckpointEvery, Interval: cfg.CheckpointInterval, Trusted: cfg.AuditPublicKeys,
	}, log)
	a.reg.MustRegister(audit.NewCheckpointCollector(a.Jobs, a.Checkpoints.Keys(), log))
	a.start.Step("reading permissions and the replay policy")
	a.cfg.PublicURL = PublicURLOf(cfg.PublicURL)
	if a.cfg.PublicURL == "" {
		a.cfg.PublicURL = a.URL()
	}
	if a.cfg.OIDC.RedirectURL == "" {
		a.cfg.OIDC.RedirectURL = a.cfg.PublicURL + "/auth/callback"
	}
	if a.cfg.OIDC.PostLogoutURL == "" {
		a.cfg.OIDC.PostLogoutURL = a.cfg.PublicURL + "/signed-out"
	}
	secure := a.cfg.Secure()
	warnIfInsecure(a.cfg.PublicURL, secure, log)
	sessions, stop := authz.NewSessions(a.Pool, authz.SessionConfig{
		Secure: secure, IdleTimeout: cfg.IdleTimeout, Lifetime: cfg.Lifetime, Log: log,
	})
	a.stopSess = stop
	if a.Access, err = authz.NewAccess(ctx, a.Jobs, cfg.Groups, log); err != nil {
		return nil, err
	}
	if a.mappings, err = authz.NewMappingWatch(ctx, a.Jobs, cfg.Groups, processName("serve"), a.reg, log); err != nil {
		return nil, err
	}
	if cfg.Replay.DirectoryMaxAge <= 0 {
		cfg.Replay.DirectoryMaxAge = cfg.Lifetime // no session confirmed groups older than that
	}
	cfg.Replay.Metrics = a.reg
	cfg.Replay.DLQPrefix = cfg.Prefix // the prefix this console ingests: never a replay's target
	if a.replay, err = newReplayParts(ctx, cfg.Replay, a.Pool, a.Jobs, a.NATS, a.JetStream, a.Access, a.Store, log); err != nil {
		return nil, err
	}
	a.Replays = a.replay.service
	a.keeper = dlq.NewKeeper(jobStore, dlq.KeeperConfig{
		Every: cfg.Keeper.Every, Ahead: cfg.Keeper.Ahead, BatchRows: cfg.Keeper.BatchRows,
		// The terms in force, as the Policy page shows them (a reload
		// changes both); each pass asks once, and removes by them only
		// while their version is the active terms' (dlq.Terms).
		Policy: func() dlq.RetentionPolicy {
			r := a.replay.service.Policy().Retention()
			return dlq.Terms{RetentionPolicy: RetentionOf(r), Version: replay.RetentionVersion(r)}
		},
		JetStream: a.JetStream, AckWait: cfg.AckWait,
		Checkpoint: func(ctx context.Context, tx pgx.Tx, reason string) error {
			_, err := a.Checkpoints.RecordIn(ctx, tx, reason)
			return err
		},
	}, a.reg, log)
	a.start.Wait("the identity provider", "OIDC_WAIT", cfg.OIDCWait)
	login, err := authz.NewLogin(ctx, a.cfg.OIDC, cfg.OIDCWait, sessions, a.Pool, log)
	if err != nil {
		return nil, err
	}
	a.Denials = authz.NewAnonymousDenials(a.reg, log)
	login.RememberIn(authz.NewDirectory(a.Pool))
	login.CountDenialsIn(a.Denials)
	a.Handler = web.New(web.Deps{
		Pool: a.Pool, NATS: a.NATS, Gatherer: a.reg, Log: log,
		Config: web.Config{
			Version: cfg.Version, FormTargets: originOf(cfg.OIDC.Issuer), Secure: secure, MetricsToken: cfg.MetricsToken,
			TrustedProxies: cfg.TrustedProxies, MaxPayloadBytes: a.NATS.MaxPayload(),
			ConsoleURLs: []string{a.cfg.PublicURL, a.cfg.OIDC.RedirectURL},
		},
		Sessions: sessions, Login: login, Access: a.Access, Bindings: authz.NewBindings(a.Pool), DeadLetters: a.Store,
		Replays: a.Replays, PolicyFile: cfg.Replay.PolicyFile, Checkpoints: a.Checkpoints, Denials: a.Denials,
		IngestHealth: a.ingester.Health, AuditKeys: a.Checkpoints.Keys(),
		DLQStream: a.ingester.Config().Stream, DLQMaxAge: a.ingester.Config().StreamMaxAge, Draining: a.draining.Load,
	})
	if err := a.replay.activate(ctx); err != nil {
		return nil, err
	}
	a.console.Ready(a.Handler)
	if a.metricsOut != nil {
		a.metricsOut.Ready(web.MetricsHandler(a.reg, cfg.MetricsToken))
	}
	return a, nil
}

// listen opens cfg.Addr and cfg.MetricsAddr before New waits for anything
// and serves them as a starting process (web.Start) until New hands them
// over: /healthz answers 200 and /readyz 503 naming what the console
// waits for (PostgreSQL up to DATABASE_WAIT, NATS, the identity
// provider), on the address probes ask once it started, so that an
// orchestrator does not kill replicas that wait as told (every replica, in
// a database outage) as hung. /metrics answers 503 until it can be served.
// An address in use is found before the waits, not after them.
func (a *App) listen() error {
	var err error
	if a.listener, err = net.Listen("tcp", a.cfg.Addr); err != nil {
		return fmt.Errorf("CONSOLE_ADDR %s: %w", a.cfg.Addr, err)
	}
	a.console = a.start.Probes()
	a.http = web.NewHTTPServer(a.console, a.log)
	a.serve(a.http, a.listener, "http")
	a.log.Info("listening; /readyz says what the console waits for until it has started", "addr", a.listener.Addr().String())
	if a.cfg.MetricsAddr == "" || a.cfg.MetricsAddr == MetricsOff {
		return nil
	}
	if a.metricsL, err = net.Listen("tcp", a.cfg.MetricsAddr); err != nil {
		return fmt.Errorf("METRICS_ADDR %s: %w", a.cfg.MetricsAddr, err)
	}
	a.metricsOut = a.start.Unavailable()
	a.metrics = web.NewHTTPServer(a.metricsOut, a.log)
	a.serve(a.metrics, a.metricsL, "metrics http")
	return nil
}

// serve serves l with srv until srv shuts down; another end of Serve is
// sent to Run, which stops with it.
func (a *App) serve(srv *http.Server, l net.Listener, name string) {
	a.serving.Go(func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.served <- fmt.Errorf("%s: %w", name, err)
		}
	})
}

// MetricsOff as MetricsAddr turns the metrics listener off.
const MetricsOff = "off"

// MetricsURL is where /metrics is served on its own listener ("" without
// one).
func (a *App) MetricsURL() string {
	if a.metricsL == nil {
		return ""
	}
	return "http://" + a.metricsL.Addr().String() + "/metrics"
}

// warnIfInsecure warns when sessions would travel in clear text to a
// non-loopback address.
func warnIfInsecure(publicURL string, secure bool, log *slog.Logger) {
	u, err := url.Parse(publicURL)
	if err != nil || secure || IsLoopback(u.Hostname()) {
		return
	}
	log.Warn("CONSOLE_PUBLIC_URL is http on an address other machines reach: session cookies and sign-ins travel unencrypted; "+
		"serve the console over https (CONSOLE_PUBLIC_URL=https://...) or set TLS_TERMINATED when a proxy ends TLS in front of it",
		"public_url", publicURL)
}

// URL is where the console listens: http://<address of the listener>.
func (a *App) URL() string { return "http://" + a.listener.Addr().String() }

// IngestHealth is how far behind ingest is, as of its last checks.
func (a *App) IngestHealth() dlq.IngestHealth { return a.ingester.Health() }

// NATSURL is the NATS the console uses (the embedded server's when it
// started one).
func (a *App) NATSURL() string { return a.natsURL }

// Run ingests, keeps the permissions current and runs the replay workers,
// while the listeners New opened serve, until ctx ends (or one of them
// fails, or the NATS connection is closed for good: natsEnd), then shuts
// down gracefully.
func (a *App) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	wg.Go(func() {
		if err := a.ingester.Run(ctx); err != nil {
			errs <- fmt.Errorf("ingester: %w", err)
			cancel()
		}
	})
	wg.Go(func() { a.Access.Watch(ctx) })
	wg.Go(func() { a.mappings.Run(ctx) })
	wg.Go(func() { a.Store.Counters().Run(ctx) })
	wg.Go(func() { a.keeper.Run(ctx) })
	wg.Go(func() { dlq.RunFolder(ctx, a.Jobs, a.cfg.Keeper.FoldEvery, a.ingestMetrics.Folded, a.log) })
	wg.Go(func() { a.replay.run(ctx) })
	wg.Go(func() { a.Checkpoints.Run(ctx) })
	var served error
	listenerFailed := false
	select {
	case <-ctx.Done():
	case served = <-a.served:
		listenerFailed = true
		cancel()
	case served = <-a.natsEnd.lost:
		cancel()
	}
	a.drain(listenerFailed)
	a.log.Info("shutting down")
	sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer scancel()
	if err := a.http.Shutdown(sctx); err != nil {
		a.log.Warn("http shutdown", "err", err)
	}
	if a.metrics != nil {
		if err := a.metrics.Shutdown(sctx); err != nil {
			a.log.Warn("metrics http shutdown", "err", err)
		}
	}
	a.serving.Wait()
	wg.Wait()
	close(errs)
	failed := <-errs // nil when closed and empty
	if served == nil {
		// The close may end a part (the ingester) before its handler
		// reports it: the close is why Run ends.
		served = a.natsEnd.endedBy(a.NATS, failed)
	}
	if served != nil {
		return served
	}
	return failed
}

// drain makes /readyz answer 503 and, unless a listener itself failed,
// keeps serving for ShutdownDrain before Run closes it: long
// enough for the load balancer's readiness probes to take this replica
// out (docs/runbook.md, "Stopping a replica"). The background work has
// already been told to stop; the pages need only PostgreSQL.
func (a *App) drain(listenerFailed bool) {
	// A kept-alive connection would carry a client's requests to this
	// replica past the drain (a load balancer's pooled connections keep
	// coming): each response from now on closes its connection, so the
	// next request opens one to a replica that is ready. Before /readyz
	// says so, so that no response after it keeps its connection.
	a.http.SetKeepAlivesEnabled(false)
	a.draining.Store(true)
	if a.cfg.ShutdownDrain <= 0 || listenerFailed {
		return
	}
	a.log.Info("draining: /readyz answers 503 while the console still serves, then the listener closes", "drain", a.cfg.ShutdownDrain)
	time.Sleep(a.cfg.ShutdownDrain)
}

// Close stops the listeners, releases connections and stops the embedded
// server. Call it after Run returned (or instead of Run).
func (a *App) Close() {
	// Shut down by Run; closed here when Run never started (New failed
	// after listening, or Close instead of Run). A second close is
	// harmless.
	for _, srv := range []*http.Server{a.http, a.metrics} {
		if srv != nil {
			_ = srv.Close()
		}
	}
	for _, l := range []net.Listener{a.listener, a.metricsL} {
		if l != nil {
			_ = l.Close()
		}
	}
	a.serving.Wait()
	if a.stopSess != nil {
		a.stopSess()
	}
	if a.NATS != nil {
		a.natsEnd.stop()
		_ = a.NATS.Drain()
	}
	if a.embedded != nil {
		a.embedded.Shutdown()
		a.embedded.WaitForShutdown()
	}
	if a.Pool != nil {
		a.Pool.Close()
	}
	if a.Jobs != nil {
		a.Jobs.Close()
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
