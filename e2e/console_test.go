package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// Console is a running `console serve` process.
type Console struct {
	URL         string // http://127.0.0.1:<port>
	MetricsURL  string // http://127.0.0.1:<port>/metrics, its own listener
	DatabaseURL string // as the runtime role
	NATSURL     string
	// AuditPublicKey is the PEM file of the key its checkpoints are signed
	// with.
	AuditPublicKey string
	proc           *proc
}

// consoleStopTimeout bounds a graceful stop (the console allows 15 s for
// HTTP shutdown).
const consoleStopTimeout = 30 * time.Second

// startConsole runs `console serve` on addr with env (CONSOLE_ADDR,
// DATABASE_URL, NATS_URL, METRICS_ADDR, AUDIT_SIGNING_KEY_FILE and OIDC
// settings are given by the caller, c's fields say which) and waits until
// /readyz answers 200.
func startConsole(t *testing.T, name string, c *Console, env []string) *Console {
	t.Helper()
	c.proc = startProc(t, &proc{name: name, bin: consoleBinary(t), args: []string{"serve"}, env: env})
	c.waitReady(t)
	return c
}

// waitReady waits until /readyz answers 200 (PostgreSQL and NATS reachable).
func (c *Console) waitReady(t *testing.T) {
	t.Helper()
	wait.For(t, "console /readyz", 90*time.Second, whileRunning(httpOK(c.URL+"/readyz"), c.proc))
}

// Stop stops the console gracefully (SIGTERM) and waits until it exited.
func (c *Console) Stop(t *testing.T) { t.Helper(); c.proc.Stop(t, consoleStopTimeout) }

// Kill kills the console with SIGKILL: no shutdown code runs.
func (c *Console) Kill(t *testing.T) { t.Helper(); c.proc.Kill(t) }

// Start starts a stopped (or killed) console again with the same
// settings (same port, database and NATS) and waits until it is ready.
func (c *Console) Start(t *testing.T) {
	t.Helper()
	c.proc.Start(t)
	c.waitReady(t)
}

// Restart is Stop then Start.
func (c *Console) Restart(t *testing.T) {
	t.Helper()
	c.Stop(t)
	c.Start(t)
}

// Logs is everything the console printed, over all its runs.
func (c *Console) Logs() string { return c.proc.Output() }

// AuditVerify runs `console audit verify` against the console's database,
// fails the test unless it exits 0, and returns the head seq and hash it
// printed (0 and "" for a chain with no entries yet).
func (c *Console) AuditVerify(t *testing.T) (seq int64, hash string) {
	t.Helper()
	cmd := exec.Command(consoleBinary(t), "audit", "verify")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+c.DatabaseURL, "AUDIT_PUBLIC_KEYS="+c.AuditPublicKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("console audit verify: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "audit chain ok: no entries yet") {
		return 0, ""
	}
	m := regexp.MustCompile(`audit chain ok: \d+ entr(?:y|ies), head seq (\d+) hash ([0-9a-f]{64}); (no signed checkpoint yet|\d+ signed checkpoints? verif(?:y|ies))`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("console audit verify printed no head: %s", out)
	}
	seq, _ = strconv.ParseInt(string(m[1]), 10, 64)
	return seq, string(m[2])
}

// Metric returns the sum of every sample of the Prometheus series name on
// the metrics listener (0 when absent).
func (c *Console) Metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(c.MetricsURL)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // another series with this prefix
		}
		f := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return sum
}

// stackConfig says what a test's stack runs on. Zero values start fresh
// pieces of the test's own.
type stackConfig struct {
	// DatabaseURL of an existing database (e.g. a private PostgreSQL);
	// empty: a fresh migrated database on the shared server (DATABASE_URL).
	DatabaseURL string
	// NATSURL of running NATS servers (comma-separated); empty: start one
	// nats-server process for this test.
	NATSURL string
	// Env is added to the console's environment (e.g. DLQ_REPLICAS=3).
	Env []string
	// Replicas is how many console processes serve the same database and
	// NATS (each on its own port, all registered at Dex); default 1.
	Replicas int
}

// stack is one test's running system: PostgreSQL database, NATS, Dex and
// the console, all real processes on loopback.
type stack struct {
	DatabaseURL string        // as the runtime role
	DB          *pgxpool.Pool // for the test's own checks (the runtime role)
	// OwnerDB is the schema's owner, when the stack made its database (nil
	// with a given DatabaseURL): for tampering the way only an owner can.
	OwnerDB *pgxpool.Pool
	// AuditKeyID is the id of the key the consoles sign checkpoints with.
	AuditKeyID string
	NATS       *natsNode // the server started for this stack; nil when NATSURL was given
	NATSURL    string
	Dex        *Dex
	Console    *Console   // the first replica
	Consoles   []*Console // every replica, in start order
}

// newStack starts what cfg does not provide, then the console, and waits
// until the console is ready.
func newStack(t *testing.T, cfg stackConfig) *stack {
	t.Helper()
	s := &stack{DatabaseURL: cfg.DatabaseURL, NATSURL: cfg.NATSURL}
	if s.DatabaseURL == "" {
		db := testdb.New(t)
		s.DatabaseURL, s.DB, s.OwnerDB = db.URL, db.Pool, db.OwnerPool
	} else {
		pool, err := pgxpool.New(context.Background(), s.DatabaseURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		s.DB = pool
	}
	if s.NATSURL == "" {
		s.NATS = startNATS(t)
		s.NATSURL = s.NATS.URL()
	}
	replicas := max(cfg.Replicas, 1)
	addrs := make([]string, replicas)
	callbacks := make([]string, replicas)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		callbacks[i] = "http://" + addrs[i] + "/auth/callback"
	}
	s.Dex = startDex(t, callbacks...)
	keyFile := filepath.Join(t.TempDir(), "audit-signing.pem")
	out, err := exec.Command(consoleBinary(t), "audit", "keygen", "--out", keyFile).CombinedOutput()
	require.NoError(t, err, "console audit keygen: %s", out)
	m := regexp.MustCompile(`audit signing key ([0-9a-f]{16}) written`).FindSubmatch(out)
	require.NotNil(t, m, "%s", out)
	s.AuditKeyID = string(m[1])
	for i, addr := range addrs {
		metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		env := append([]string{
			"CONSOLE_ADDR=" + addr,
			"METRICS_ADDR=" + metricsAddr,
			"AUDIT_SIGNING_KEY_FILE=" + keyFile,
			"DATABASE_URL=" + s.DatabaseURL,
			"NATS_URL=" + s.NATSURL,
			"POLICY_FILE=" + filepath.Join(repoRoot(), "dev", "policy.toml"),
			"REPLAY_SUBJECT_ALLOW=app.{tenant}.>", // the target stream APP of the replay journeys
			"OIDC_ISSUER=" + s.Dex.Issuer,
			"OIDC_CLIENT_ID=" + oidcClientID,
			"OIDC_CLIENT_SECRET=" + oidcClientSecret,
			"LOG_LEVEL=info",
			"LOG_FORMAT=text",
			"DLQ_REPLICAS=1",
			"DLQ_WATCH_STREAMS=",
			"AUTHZ_GROUP_ROLES=",
			"AUTHZ_GROUP_PREFIX=" + dexGroupPrefix,
		}, cfg.Env...) // later entries win: cfg.Env overrides these defaults
		name := "console"
		if i > 0 {
			name = fmt.Sprintf("console-%d", i+1)
		}
		c := &Console{URL: "http://" + addr, MetricsURL: "http://" + metricsAddr + "/metrics", DatabaseURL: s.DatabaseURL,
			NATSURL: s.NATSURL, AuditPublicKey: keyFile + ".pub"}
		s.Consoles = append(s.Consoles, startConsole(t, name, c, env))
	}
	s.Console = s.Consoles[0]
	return s
}
