package app

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/web"
)

// ReplayConfig is what replay needs, in serve and in worker.
type ReplayConfig struct {
	PolicyFile        string
	Workers           int // replay workers in this process
	Subjects          *replay.SubjectAllowlist
	DLQPrefix         string // DLQ_SUBJECT_PREFIX (empty: dlq.DefaultSubjectPrefix): never a replay's target (SubjectAllowlist.Reserving)
	RevalidateSubject string // empty: revalidate items are blocked
	RevalidateTimeout time.Duration
	Lease             time.Duration
	DraftTTL          time.Duration // 0: replay.DefaultDraftTTL
	WindowMargin      time.Duration // 0: replay.DefaultWindowMargin
	// MaxPayload is a ceiling in bytes on a replay's message, headers
	// included, below the server's max_payload (REPLAY_MAX_PAYLOAD; 0:
	// the max_payload the server announced when the console connected).
	// The server does not tell a connection of a limit lowered since (a
	// config reload) or of an account or user limit below its own, and
	// closes it for good when a message goes over: set this to the lowest
	// limit the console's account and user have, so that a replay over it
	// is refused when it is judged instead.
	MaxPayload int64
	Groups     authz.GroupMap
	// DirectoryMaxAge is how old a person's groups (as last read from the
	// identity provider) may be for a worker's execution-time check: the
	// session lifetime (SESSION_LIFETIME); 0: authz.DefaultDirectoryMaxAge.
	DirectoryMaxAge time.Duration
	// Metrics registers quarantine_replay_policy_stale (nil: not
	// exported).
	Metrics prometheus.Registerer
}

// LoadPolicy reads and validates the policy table; the error names the
// file, line and field.
func LoadPolicy(path string) (*replaypolicy.Table, error) {
	t, err := replaypolicy.Load(path)
	if err != nil {
		return nil, fmt.Errorf("POLICY_FILE: %w", err)
	}
	return t, nil
}

// policyFile is a process's policy file and the table in force from it.
// A process whose table is not the active version reads the file again
// before each thing it would judge (each worker every poll, 200 ms when
// idle): content read before is neither parsed nor logged again, so that
// a stale process says once that its file changed, or does not parse, not
// ten times a second. The content is compared, not the file's mtime,
// which a rewrite within the same tick leaves as it was.
type policyFile struct {
	path    string
	log     *slog.Logger
	inForce atomic.Pointer[replaypolicy.Table]

	mu     sync.Mutex
	sum    [sha256.Size]byte // of the content last read
	err    error             // why that content gives no table (nil when it does)
	logged string            // the last error logged, so each is logged once
}

// load reads the file and puts its table in force; the error names the
// file, line and field.
func (f *policyFile) load() (*replaypolicy.Table, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("POLICY_FILE: %w", err)
	}
	t, err := replaypolicy.Parse(f.path, data)
	if err != nil {
		return nil, fmt.Errorf("POLICY_FILE: %w", err)
	}
	f.sum = sha256.Sum256(data)
	f.inForce.Store(t)
	f.warnUnlisted(t)
	return t, nil
}

// reload reads the file again and puts its table in force when its
// content changed; it returns the table in force, or why the file gives
// none (the table in force stays). Each new version is logged once, and
// each distinct error.
func (f *policyFile) reload() (*replaypolicy.Table, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, f.fail(fmt.Errorf("POLICY_FILE: %w", err))
	}
	if sum := sha256.Sum256(data); sum != f.sum {
		f.sum = sum
		t, err := replaypolicy.Parse(f.path, data)
		f.err = err
		if err != nil {
			f.err = fmt.Errorf("POLICY_FILE: %w", err)
		} else if old := f.inForce.Swap(t); old.Version() != t.Version() {
			f.log.Info("replay policy reloaded", "file", f.path, "version", t.Version(), "before", old.Version())
			f.warnUnlisted(t)
		}
	}
	if f.err != nil {
		return nil, f.fail(f.err)
	}
	f.logged = ""
	return f.inForce.Load(), nil
}

// fail logs err unless it was the last one logged, and returns it.
func (f *policyFile) fail(err error) error {
	if msg := err.Error(); msg != f.logged {
		f.logged = msg
		f.log.Error("replay policy file cannot be read again; this process keeps the table it has", "file", f.path,
			"version", f.inForce.Load().Version(), "err", err)
	}
	return err
}

// warnUnlisted says, at every load of a new table, when its subject rules
// leave some subject unlisted: producers then pick the class of those
// subjects.
func (f *policyFile) warnUnlisted(t *replaypolicy.Table) {
	if why := t.UnlistedSubjects(); why != "" {
		f.log.Warn("replay policy: "+why, "file", f.path, "version", t.Version())
	}
}

// replayParts is the replay machinery of one process: the service, its
// workers and the sweeper of expired drafts (every sweep).
type replayParts struct {
	table   *replaypolicy.Table
	service *replay.Service // on the web pool, for requests and approvals
	sweeper *replay.Service // on the workers' pool
	workers []*replay.Worker
	sweep   time.Duration
	log     *slog.Logger
}

// newReplayParts wires replay: the service for web requests on pool, the
// workers on jobs (each pool with its own connections and timeouts). It
// changes nothing in the database: activate makes its policy the active
// one, once every other step of the start has passed.
func newReplayParts(ctx context.Context, cfg ReplayConfig, pool, jobs *pgxpool.Pool, nc *nats.Conn, js jetstream.JetStream,
	access *authz.Access, deadLetters *dlq.Store, log *slog.Logger) (*replayParts, error) {
	file := &policyFile{path: cfg.PolicyFile, log: log}
	table, err := file.load()
	if err != nil {
		return nil, err
	}
	if cfg.DraftTTL <= 0 {
		cfg.DraftTTL = replay.DefaultDraftTTL
	}
	rcfg := replay.Config{Policy: file.inForce.Load, Reload: file.reload, Subjects: cfg.Subjects.Reserving(cmp.Or(cfg.DLQPrefix, dlq.DefaultSubjectPrefix)), DraftTTL: cfg.DraftTTL,
		Revalidation: cfg.RevalidateSubject != "", Windows: replay.NewStreamWindows(js, 0), WindowMargin: cfg.WindowMargin, MaxPayload: payloadCeiling(nc.MaxPayload(), cfg.MaxPayload)}
	// People's rights when nobody is signed in: asked before an approval
	// counts (the service), and before a worker publishes.
	auth := authz.Authority{Access: access, Directory: authz.NewDirectory(jobs), MaxAge: cfg.DirectoryMaxAge}
	rcfg.Authority = auth
	workerService := replay.New(jobs, rcfg)
	rcfg.DeadLetters = deadLetters // the process's store: its partition map
	rcfg.Authority = authz.Authority{Access: access, Directory: authz.NewDirectory(pool), MaxAge: cfg.DirectoryMaxAge}
	p := &replayParts{table: table, log: log, sweep: min(cfg.DraftTTL/4, time.Minute), service: replay.New(pool, rcfg), sweeper: workerService}
	if cfg.Subjects.Empty() {
		log.Warn(replay.SubjectSetting + " is empty: no tenant's dead letters can be replayed until it names their subjects, e.g. app.{tenant}.>, " +
			"and this process's replay workers claim nothing (another process's approved replays wait for a worker that has the setting)")
	}
	if why := table.Revalidates(); why != "" && cfg.RevalidateSubject == "" {
		log.Warn("REVALIDATE_SUBJECT is empty: revalidate items cannot be replayed on this deployment (the confirm page says so); "+
			"set it to the subject of the service that re-checks original principals", "revalidate_items", why)
	}
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(replay.NewPolicyCollector(p.service, log))
	}
	var reval replay.Revalidator
	if cfg.RevalidateSubject != "" {
		reval = replay.NewNATSRevalidator(nc, cfg.RevalidateSubject, cfg.RevalidateTimeout)
	}
	for i := range cfg.Workers {
		p.workers = append(p.workers, replay.NewWorker(workerService, js, auth, reval, replay.WorkerConfig{
			Owner: fmt.Sprintf("%s-%d", processID(), i), Lease: cfg.Lease,
		}, log))
	}
	return p, nil
}

// activate makes the policy file's version the active one (with its
// retention terms) and voids the drafts and requests waiting for approval
// made under another, as process: the last step of a start, after every
// step that may fail (the identity provider's discovery above all). A
// process that never started must change nothing the running fleet works
// by: activated first, a release whose start failed (a wrong OIDC_ISSUER,
// a crash-looping pod of a rollout) made every running replica's policy
// stale, voided the requests waiting for approval, and left a rollback
// that could not take the old version back (a superseded version is never
// made active again by a start).
func (p *replayParts) activate(ctx context.Context) error {
	if err := p.service.ActivatePolicy(ctx, processID()); err != nil {
		return err
	}
	if shortened := p.service.ShortenedTerms(); len(shortened) > 0 {
		// Removed at the keeper's next pass, which runs at start: said
		// where the operator who rolled the file looks first.
		p.log.Warn("retention terms made active keep some dead letters a shorter time than the terms they replaced; the partition keeper removes by them from its next pass (at start). "+
			"If that was not meant, roll the policy file back at once (`console policy rollback`, docs/runbook.md): a rollback brings the terms back, not what was removed",
			"file", p.table.Name(), "shortened", shortened)
	}
	voided, err := p.service.VoidStale(ctx)
	if err != nil {
		return err
	}
	p.log.Info("replay policy loaded", "file", p.table.Name(), "version", p.table.Version(), "voided_requests", voided)
	st, err := p.service.PolicyStanding(ctx)
	if err != nil {
		return err
	}
	if st.Stale() {
		// An older rollout restarting, or a process whose settings were
		// not rolled: it must not take the active policy back, and it
		// must not go unnoticed (the Policy page and
		// quarantine_replay_policy_stale say so too).
		p.log.Warn("replay policy is not the active one: this process submits, approves and replays nothing until its policy file has the active version",
			"file", p.table.Name(), "version", st.Version(), "active_version", st.Active.Version,
			"active_since", st.Active.ActivatedAt, "activated_by", st.Active.ActivatedBy, "rollback", st.RollbackHint())
	}
	return nil
}

// run runs the workers and the draft sweeper until ctx ends.
func (p *replayParts) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, w := range p.workers {
		wg.Go(func() { w.Run(ctx) })
	}
	wg.Go(func() { p.sweepDrafts(ctx) })
	wg.Wait()
}

// sweepDrafts voids expired drafts, and finishes requests left running
// with nothing to run, every sweep until ctx ends. Every process sweeps;
// the guarded updates make that harmless.
func (p *replayParts) sweepDrafts(ctx context.Context) {
	t := time.NewTicker(p.sweep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := p.sweeper.ExpireDrafts(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("sweep expired replay drafts", "err", err)
		} else if n > 0 {
			p.log.Info("expired replay drafts voided", "count", n)
		}
		if n, err := p.sweeper.FinishIdle(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("sweep idle replay requests", "err", err)
		} else if n > 0 {
			p.log.Info("idle replay requests finished", "count", n)
		}
	}
}

// WorkersConfig is what `console worker` is told.
type WorkersConfig struct {
	DatabaseURL      string        // the runtime role, as for serve
	DBWait           time.Duration // how long to wait for PostgreSQL at start
	StatementTimeout time.Duration
	NATSURL          string
	NATSTokenFile    string
	NATSWait         time.Duration // how long to wait at start for NATS to take a connection (0: 1 minute)
	Replay           ReplayConfig
	// MetricsAddr is the listen address of /healthz, /readyz and /metrics
	// ("" or MetricsOff: none); MetricsToken, when set, is the bearer
	// token /metrics requires (the probes need none, as serve's).
	MetricsAddr  string
	MetricsToken string
}

// Workers is `console worker`: replay workers only, to scale them apart
// from the HTTP console.
type Workers struct {
	log      *slog.Logger
	pool     *pgxpool.Pool
	nc       *nats.Conn
	access   *authz.Access
	mappings *authz.MappingWatch
	// natsEnd reports nc closed for good: Run stops.
	natsEnd *natsEnd
	parts   *replayParts

	listener net.Listener // nil without METRICS_ADDR
	http     *http.Server
	start    web.Start     // what NewWorkers does, for the probes until it hands them over
	probes   *web.Handover // the listener's handler; nil without METRICS_ADDR
	serving  sync.WaitGroup
	served   chan error      // the listener's Serve failed; Run ends with it
	ready    web.SharedCheck // one /readyz check at a time, its answer shared
	stale    atomic.Bool     // what the last check found of this process's policy
}

// NewWorkers listens on cfg.MetricsAddr first, answering probes as a
// starting process there (as New does), then waits up to cfg.DBWait for
// PostgreSQL and cfg.NATSWait for NATS, checks the schema and the database
// role (as New does), refuses at once a NATS server or account without
// JetStream (as New does: every replay is a JetStream publish), wires
// cfg.Replay.Workers replay workers and hands the listener to /healthz,
// /readyz and /metrics; Run them.
func NewWorkers(ctx context.Context, cfg WorkersConfig, log *slog.Logger) (_ *Workers, err error) {
	w := &Workers{log: log, served: make(chan error, 1), natsEnd: newNATSEnd()}
	defer func() {
		if err != nil {
			w.Close()
			err = startEnded(ctx, err, log)
		}
	}()
	if err := w.listen(cfg.MetricsAddr); err != nil {
		return nil, err
	}
	// The workers, the permissions listener, the draft sweeper, a scrape
	// and a probe (pool_size.go); OpenPool refuses a pool_max_conns too
	// small for them before it connects.
	w.start.Wait("PostgreSQL", "DATABASE_WAIT", cfg.DBWait)
	if w.pool, err = OpenPool(ctx, cfg.DatabaseURL, cfg.DBWait, workerPool(cfg), log); err != nil {
		return nil, err
	}
	w.start.Step("checking the database schema and role")
	if err := CheckDatabase(ctx, w.pool, log); err != nil {
		return nil, err
	}
	natsWait := cmp.Or(cfg.NATSWait, time.Minute)
	w.start.Wait("NATS", "NATS_WAIT", natsWait)
	if err := WaitForNATS(ctx, cfg.NATSURL, cfg.NATSTokenFile, natsWait, log); err != nil {
		return nil, err
	}
	var js jetstream.JetStream
	if w.nc, js, err = DialNATS(cfg.NATSURL, cfg.NATSTokenFile, "quarantine-worker", append(natsEvents(log), w.natsEnd.option(log))...); err != nil {
		return nil, err
	}
	warnPlainTransport(cfg.DatabaseURL, cfg.NATSURL, w.nc, log)
	w.start.Step("asking whether the NATS account has JetStream")
	if err := dlq.JetStreamEnabled(ctx, js); err != nil {
		return nil, jetStreamOff(cfg.NATSURL, err)
	}
	w.start.Step("reading permissions and the replay policy")
	if w.access, err = authz.NewAccess(ctx, w.pool, cfg.Replay.Groups, log); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if w.mappings, err = authz.NewMappingWatch(ctx, w.pool, cfg.Replay.Groups, processName("worker"), reg, log); err != nil {
		return nil, err
	}
	cfg.Replay.Metrics = reg
	if w.parts, err = newReplayParts(ctx, cfg.Replay, w.pool, w.pool, w.nc, js, w.access, nil, log); err != nil {
		return nil, err
	}
	if err := w.parts.activate(ctx); err != nil {
		return nil, err
	}
	if w.probes != nil {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(rw, "ok\n") })
		mux.HandleFunc("GET /readyz", w.readyz)
		mux.Handle("GET /metrics", web.MetricsHandler(reg, cfg.MetricsToken))
		w.probes.Ready(mux)
	}
	return w, nil
}

// listen opens addr ("" or MetricsOff: none) and serves it as a starting
// process (web.Start) until NewWorkers hands it over: /healthz 200,
// /readyz 503 naming what the worker waits for, /metrics 503, so that an
// orchestrator does not kill a worker waiting as told.
func (w *Workers) listen(addr string) error {
	if addr == "" || addr == MetricsOff {
		return nil
	}
	var err error
	if w.listener, err = net.Listen("tcp", addr); err != nil {
		return fmt.Errorf("METRICS_ADDR %s: %w", addr, err)
	}
	w.probes = w.start.Probes()
	w.http = web.NewHTTPServer(w.probes, w.log)
	w.log.Info("listening; /readyz says what the worker waits for until it has started", "addr", w.listener.Addr().String())
	w.serving.Go(func() {
		if err := w.http.Serve(w.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.served <- fmt.Errorf("metrics http: %w", err)
		}
	})
	return nil
}

// Count is how many replay workers run.
func (w *Workers) Count() int { return len(w.parts.workers) }

// Addr is where /healthz, /readyz and /metrics are served ("" without a
// listener).
func (w *Workers) Addr() string {
	if w.listener == nil {
		return ""
	}
	return w.listener.Addr().String()
}

// Run runs the workers, keeping the permissions current, while the
// listener NewWorkers opened serves, until ctx ends or the NATS
// connection is closed for good (natsEnd); the error is the listener's,
// or the connection's.
func (w *Workers) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { w.access.Watch(ctx) })
	wg.Go(func() { w.mappings.Run(ctx) })
	wg.Go(func() { w.parts.run(ctx) })
	var served error
	select {
	case <-ctx.Done():
	case served = <-w.served:
		cancel()
	case served = <-w.natsEnd.lost:
		cancel()
	}
	if w.http != nil {
		sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer scancel()
		if err := w.http.Shutdown(sctx); err != nil {
			w.log.Warn("metrics http shutdown", "err", err)
		}
	}
	w.serving.Wait()
	wg.Wait()
	return served
}

// readyz answers 200 when PostgreSQL answers, 503 naming it when not,
// never with the error's text (the log has it). A policy that is not the
// active one is said under "degraded", not failed: the worker then claims
// nothing, but it is not broken and a restart does not mend it (it reads
// its policy file again every poll; a deploy of the active file does),
// and quarantine_replay_policy_stale and its alert report it. NATS not
// connected is said there too, as serve's /readyz does: it is one
// cluster for every worker, and a connection reconnects by itself. One
// the client closed for good does not: that fails readiness (Run stops
// the process for its supervisor to start again).
func (w *Workers) readyz(rw http.ResponseWriter, r *http.Request) {
	var problems, degraded []string
	if err := w.ready.Answer(r.Context(), w.checkPostgres); err != nil {
		problems = append(problems, "postgresql: not answering")
	} else if w.stale.Load() {
		degraded = append(degraded, "replay policy: stale")
	}
	switch {
	case w.nc.IsClosed():
		problems = append(problems, web.NATSClosedProblem)
	case !w.nc.IsConnected():
		degraded = append(degraded, "nats: not connected")
	}
	code, body := web.Readiness(problems, degraded)
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	_ = json.NewEncoder(rw).Encode(body)
}

// checkPostgres is readyz's check: PostgreSQL answers with the active
// policy version, and whether this process's is it.
func (w *Workers) checkPostgres(ctx context.Context) error {
	st, err := w.parts.service.PolicyStanding(ctx)
	if err != nil {
		w.log.Warn("not ready: PostgreSQL", "err", err)
		return err
	}
	w.stale.Store(st.Stale())
	return nil
}

// Close stops the listener and lets go of the connections.
func (w *Workers) Close() {
	if w.http != nil {
		_ = w.http.Close() // shut down by Run; here when Run never started; a second close is harmless
	}
	if w.listener != nil {
		_ = w.listener.Close()
	}
	w.serving.Wait()
	if w.nc != nil {
		w.natsEnd.stop()
		w.nc.Close()
	}
	if w.pool != nil {
		w.pool.Close()
	}
}

// payloadCeiling is the size a replay's message may have: the server's
// max_payload as the connection was told, or ceiling when that is lower
// (0: none).
func payloadCeiling(server, ceiling int64) int64 {
	if ceiling > 0 && (server <= 0 || ceiling < server) {
		return ceiling
	}
	return server
}

// processID names this process in the database: its host and pid.
func processID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// processName is this process of kind (serve, worker) as others' log
// lines name it: "serve on host-pid".
func processName(kind string) string { return kind + " on " + processID() }
