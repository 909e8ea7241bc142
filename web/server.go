package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/quarantine-console/quarantine/audit"
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
	// Secure is true when people reach the console over https (its public
	// URL is https, or TLS ends in front of it): responses carry HSTS.
	Secure bool
	// MetricsToken, when set, serves GET /metrics on this handler to
	// requests with "Authorization: Bearer <token>". Empty: /metrics is not
	// served here, only on the metrics listener (MetricsHandler).
	MetricsToken string
	// TrustedProxies are the networks whose X-Forwarded-For names the
	// client; empty: the client is the TCP peer (no header is believed).
	TrustedProxies []*net.IPNet
	// ConsoleURLs are URLs of the console itself (its public URL, its
	// sign-in callback): an error group's ticket link may not lead to their
	// hosts, nor to the host a request was sent to (ticket_link.go).
	ConsoleURLs []string
	// MaxPayloadBytes is the largest payload NATS publishes (its
	// max_payload). The payload edit route's body limit (BodyPayload) is
	// set by the largest edit taken, replay.MaxEditablePayload, or by this
	// when it is less. Default 8 MiB.
	MaxPayloadBytes int64
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
	// Checkpoints signs the audit chain's head for exports and shows the
	// latest checkpoint on the auditor's page.
	Checkpoints *audit.Checkpointer
	// Denials counts and logs refusals of anonymous clients (never audited).
	Denials *authz.AnonymousDenials
	// IngestHealth reports how far behind ingest is (the dashboard); nil
	// when this process does not ingest.
	IngestHealth func() dlq.IngestHealth
	// AuditKeys are the public keys the auditor's "verify chain" checks
	// checkpoint signatures with, as `console audit verify` does.
	AuditKeys *audit.KeySet
	// DLQStream names the DLQ stream (the dashboard shows it against its
	// limits).
	DLQStream string
	// DLQMaxAge is the DLQ_MAX_AGE setting (0: none): the console raises
	// the stream's age limit back up to it, so the dashboard's advice to
	// lower that limit names the setting first.
	DLQMaxAge time.Duration
	// Draining reports that the console is stopping (SHUTDOWN_DRAIN):
	// /readyz then answers 503 while the pages are still served. Nil:
	// never.
	Draining func() bool
}

// Server holds the dependencies of the handlers.
type Server struct {
	deps Deps
	echo *echo.Echo
	// verifying is held while the audit chain is verified: one at a time.
	verifying sync.Mutex
	// navCounts keeps the navigation's pending-approvals counts.
	navCounts navCounts
	// crossSiteDenials limits per person the denial rows of requests
	// another site started (middleware.go).
	crossSiteDenials *authz.CrossSiteDenials
	// pgCheck shares PostgreSQL's answer among /readyz probes
	// (pingPostgres).
	pgCheck SharedCheck
	// natsDown is what /readyz last saw of NATS: it logs the turn, not each probe.
	natsDown atomic.Bool
	// patterns are the route patterns echo serves, by method, read once
	// when the routes are added (answersGet asks them on every page).
	patterns map[string]map[string]bool
	// routeOf is the route table by method and pattern (routeKey), built
	// with the router: a cross-site post's refusal finds its route there
	// (crossOriginTried).
	routeOf map[string]Route
	// downloads bound the exports and payload downloads running at once
	// (download_limit.go).
	downloads downloadLimits
	// people bounds the requests each person has running at once
	// (person_limit.go, taken in enforce).
	people personLimit
}

// New returns the console's HTTP handler: security headers, cross-origin
// protection for every unsafe method, sessions, then echo with every route
// of Routes behind the route table's enforcement.
func New(d Deps) http.Handler {
	if d.Denials == nil {
		d.Denials = authz.NewAnonymousDenials(nil, d.Log)
	}
	if d.Config.MaxPayloadBytes <= 0 {
		d.Config.MaxPayloadBytes = 8 << 20
	}
	s := &Server{deps: d, crossSiteDenials: authz.NewCrossSiteDenials(d.Log), downloads: newDownloadLimits(d.Pool),
		people: personLimit{n: requestsFor(d.Pool)}}
	if d.Login != nil {
		// A session that ends in a sign-in's own steps (sign-out, a new
		// sign-in, a refresh refused) is forgotten by the memory of
		// cross-site refusals at once (crossOriginRefused).
		d.Login.ForgetEndedIn(s.crossSiteDenials)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.IPExtractor = clientIP(d.Config.TrustedProxies)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisablePrintStack: true}))
	routes := s.Routes()
	s.routeOf = make(map[string]Route, len(routes))
	for _, r := range routes {
		e.Add(r.Method, r.Path, r.Handler, s.limitBody(r), s.enforce(r), s.limitDownload(r), s.recount(r))
		s.routeOf[routeKey(r.Method, r.Path)] = r
	}
	s.echo = e
	s.patterns = routePatterns(e)
	d.Sessions.ErrorFunc = s.sessionFailed
	readSession := func(h http.Handler) http.Handler { return authz.WithSessionReads(d.Sessions.LoadAndSave(h)) }
	// Cross-origin protection comes before the session is read, so that a
	// refusal may cost no read of it (crossOriginRefused).
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(s.crossOriginRefused(readSession))
	var targets string
	if d.Config.FormTargets != "" {
		targets = " " + strings.TrimSpace(d.Config.FormTargets)
	}
	return withRequestID(securityHeaders(cop.Handler(readSession(s.headAsGet(e))), targets, d.Config.Secure))
}

// headAsGet serves HEAD of a GET route that only reads (a probe, a page,
// a partial) as that GET, under its declaration in the route table, so a
// monitor or a link checker gets what GET would answer instead of 405; the
// server sends no body to a HEAD, whatever the handler writes (net/http
// judges by the request it read). A GET with an effect answers HEAD 405,
// as every route without a HEAD of its own: an audited download (Writes),
// any other download (Download: it holds a slot of its kind), a step of
// the sign-in flow (/auth/...: a HEAD must neither start a sign-in nor
// spend a code) (TestHeadAnswersLikeGet).
func (s *Server) headAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && s.readsOnly(r.URL.Path) {
			r = r.Clone(r.Context())
			r.Method = http.MethodGet
		}
		next.ServeHTTP(w, r)
	})
}

// readsOnly reports whether path is a GET route that only reads and has no
// HEAD route of its own (headAsGet).
func (s *Server) readsOnly(path string) bool {
	pattern := s.routeFor(http.MethodGet, path)
	if !s.hasRoute(http.MethodGet, pattern) || s.hasRoute(http.MethodHead, s.routeFor(http.MethodHead, path)) {
		return false
	}
	r := s.routeOf[routeKey(http.MethodGet, pattern)]
	return !r.Writes && r.Download == NoDownload && !strings.HasPrefix(pattern, "/auth/")
}

// clientIP is how the console tells who a request came from (audit rows,
// logs): the TCP peer, or with trusted proxies, the address the nearest
// untrusted hop gave in X-Forwarded-For. Loopback and private networks are
// not trusted unless listed: anyone could otherwise name any address.
func clientIP(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

func (s *Server) healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// readyz answers 200 when this replica can serve pages: PostgreSQL
// answers (pingPostgres) and the NATS connection is up; 503 naming the
// dependency that is not. Ingest is not asked: every replica watches the
// same consumer, so a stall would take every console out of the load
// balancer at once, when on-call needs the dashboard; the
// DeadLetterIngestStalled alert and the dashboard report it. The answer is
// public (load balancers ask it), so it never carries an error's text,
// which may hold addresses, user names or worse; the log has that.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), readyBudget)
	defer cancel()
	var problems []string
	if s.deps.Draining != nil && s.deps.Draining() {
		problems = append(problems, "shutting down") // out of the load balancer before the listener closes
	}
	if err := s.pingPostgres(ctx); err != nil {
		problems = append(problems, "postgresql: not answering") // logged once a check (pingPostgres), not once a probe
	}
	// NATS lost leaves the pages working (triage, audit, approvals) and
	// stops what needs it (ingest, replays) on every replica at once, as
	// it is one cluster for all: failing readiness for it would take every
	// replica out of the load balancer when on-call needs the console. It
	// is said, not failed, while the connection reconnects by itself; the
	// alerts report what it stops. A connection the client closed for
	// good (after a fatal -ERR of the server: a Maximum Payload Violation)
	// never comes back: that replica fails, and stops to be restarted.
	var degraded []string
	natsDown := s.deps.NATS == nil || !s.deps.NATS.IsConnected()
	switch {
	case s.deps.NATS != nil && s.deps.NATS.IsClosed():
		problems = append(problems, NATSClosedProblem)
	case natsDown:
		degraded = append(degraded, "nats: not connected")
	}
	if s.natsDown.Swap(natsDown) != natsDown && natsDown { // said when it turns, not at every probe
		s.deps.Log.Warn("degraded: NATS is not connected")
	}
	return c.JSON(Readiness(problems, degraded))
}

// Readiness is a /readyz answer, serve's and console worker's: 503 naming
// the problems (and what is degraded) when there are any, else 200, naming
// what is degraded (said, not failed). Neither holds an error's text.
func Readiness(problems, degraded []string) (int, map[string]any) {
	switch {
	case len(problems) > 0:
		return http.StatusServiceUnavailable, map[string]any{"ready": false, "problems": append(problems, degraded...)}
	case len(degraded) > 0:
		return http.StatusOK, map[string]any{"ready": true, "degraded": degraded}
	}
	return http.StatusOK, map[string]any{"ready": true}
}

// NATSClosedProblem is what /readyz (serve's and console worker's) says
// of a NATS connection the client closed for good: it does not reconnect,
// and the process stops for its supervisor to start it again.
const NATSClosedProblem = "nats: connection closed for good, not reconnecting; the process stops to be restarted"

// readyBudget is how long a probe waits for PostgreSQL's answer, and how
// long the check that answers it may take.
const readyBudget = 2 * time.Second

// readyReuse is how long a check's answer answers further probes: load
// balancer nodes and kubelets each probe every few seconds, and anyone who
// reaches the port may probe as often as they like.
const readyReuse = time.Second

// pingPostgres asks PostgreSQL to answer through the web pool or, when
// every connection of the pool is lent out to requests (slow pages, an
// export, many people at once), through a connection of its own, closed
// after: a full pool is this replica being busy, not PostgreSQL being
// down, and taking the busiest replicas out of the load balancer only
// moves their load onto the others. /readyz is public, so probes do not
// each ask: one check runs at a time and every probe that comes while it
// runs, or up to readyReuse after, takes its answer (SharedCheck). The extra
// connection is therefore at most one per process, only while the pool is
// full, opened at most once a readyReuse.
//
// The connection is not kept for the next check: it would hold a session
// of max_connections (which README sizes the pools under) past the busy
// spell, a kept connection PostgreSQL or a pooler closed would have to be
// told from PostgreSQL down, and the server has no Close to end it; one
// connection a second at most costs PostgreSQL little.
func (s *Server) pingPostgres(ctx context.Context) error {
	return s.pgCheck.Answer(ctx, func(ctx context.Context) error {
		err := s.checkPostgres(ctx)
		if err != nil {
			s.deps.Log.Warn("not ready: PostgreSQL", "err", err)
		}
		return err
	})
}

// checkPostgres is pingPostgres's check; see there.
func (s *Server) checkPostgres(ctx context.Context) error {
	pool := s.deps.Pool
	if !poolFull(pool) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := pool.Ping(pctx)
		cancel()
		if err == nil || !poolFull(pool) {
			return err
		}
		// Every connection was taken while the ping waited for one.
	}
	cfg := pool.Config().ConnConfig.Copy()
	cfg.Tracer = nil // not a request's statement
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("the web pool is busy, and a connection of its own: %w", err)
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// SharedCheck shares one readiness check's answer among the probes of a
// process (serve's /readyz, console worker's): at most one check runs at
// a time, and an answer younger than readyReuse answers without another,
// so that probes, which anyone may send, cannot take the process's
// database connections. The zero value is ready.
type SharedCheck struct {
	mu      sync.Mutex
	running *sharedAnswer // the check under way; nil when none is
	last    *sharedAnswer // the latest check that ended; nil before the first
}

// sharedAnswer is one check's answer; err and at are set before done closes.
type sharedAnswer struct {
	done chan struct{}
	err  error
	at   time.Time // when the check ended
}

// Answer is answer on the clock.
func (p *SharedCheck) Answer(ctx context.Context, check func(context.Context) error) error {
	return p.answer(ctx, time.Now, check)
}

// answer returns the answer of the latest check if it ended less than
// readyReuse ago, else that of the check under way, starting check when
// none is. The check runs apart from any probe, with readyBudget, so a
// probe that leaves (its client gone, its budget spent) does not end it
// for the others; a probe waits only as long as ctx lets it, and then
// returns ctx's error.
func (p *SharedCheck) answer(ctx context.Context, now func() time.Time, check func(context.Context) error) error {
	p.mu.Lock()
	if p.last != nil && now().Sub(p.last.at) < readyReuse {
		err := p.last.err
		p.mu.Unlock()
		return err
	}
	a := p.running
	if a == nil {
		a = &sharedAnswer{done: make(chan struct{})}
		p.running = a
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), readyBudget)
			err := check(cctx)
			cancel()
			p.mu.Lock()
			a.err, a.at = err, now()
			p.running, p.last = nil, a
			p.mu.Unlock()
			close(a.done)
		}()
	}
	p.mu.Unlock()
	select {
	case <-a.done:
		return a.err
	case <-ctx.Done():
		return fmt.Errorf("wait for the readiness check: %w", ctx.Err())
	}
}

// poolFull reports whether every connection pool may open is lent out.
func poolFull(pool *pgxpool.Pool) bool {
	st := pool.Stat()
	return st.AcquiredConns() >= st.MaxConns()
}

// metrics serves /metrics on the console's own address, only when a token
// is configured (see MetricsHandler).
func (s *Server) metrics() echo.HandlerFunc {
	return echo.WrapHandler(MetricsHandler(s.deps.Gatherer, s.deps.Config.MetricsToken))
}

// MetricsHandler serves the Prometheus metrics of g. With a token, only
// requests carrying "Authorization: Bearer <token>" get them (401
// otherwise); the comparison takes the same time whatever the guess.
// Metrics name tenants and queue depths: serve them on a loopback or
// internal address (METRICS_ADDR), or behind a token (METRICS_TOKEN_FILE).
func MetricsHandler(g prometheus.Gatherer, token string) http.Handler {
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte("Bearer " + token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "metrics need a bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
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

// MaxHeaderBytes bounds a request's header block (Go's default is 1 MiB):
// enough for the console's cookies and a sign-in callback, not for a
// client that wants to make every request expensive.
const MaxHeaderBytes = 64 << 10

// NewHTTPServer returns the HTTP server for h with the console's limits:
// header size, and read, write and idle timeouts (writes may take minutes:
// exports stream).
func NewHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      5 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
