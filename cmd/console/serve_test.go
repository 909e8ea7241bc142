package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/ports"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

func httpGet(t *testing.T, u string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// TestMetricsNotPublic: /metrics (tenants, depths) is not on the console's
// public address; it is on its own listener, loopback by default, and with
// a token configured it answers only to that bearer token, wherever asked.
func TestMetricsNotPublic(t *testing.T) {
	t.Parallel()
	a, base, _ := startApp(t, nil)
	resp, _ := httpGet(t, base+"/metrics", nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "not on the public address")
	metrics := a.MetricsURL()
	resp, body := httpGet(t, metrics, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "quarantine_anonymous_denials_total")
	assert.Contains(t, body, "quarantine_audit_unsigned_entries")

	cfg, err := parseServe(nil, env(map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1/db", "OIDC_ISSUER": "http://127.0.0.1:1/dex",
		"OIDC_CLIENT_ID": "c", "AUDIT_SIGNING_KEY_FILE": newKeyFile(t)}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9464", cfg.MetricsAddr, "loopback by default")

	tokenFile := filepath.Join(t.TempDir(), "metrics-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret-metrics-token\n"), 0o600))
	a, base, _ = startApp(t, map[string]string{"METRICS_TOKEN_FILE": tokenFile})
	metrics = a.MetricsURL()
	for _, u := range []string{base + "/metrics", metrics} {
		resp, _ := httpGet(t, u, nil)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, u)
		resp, _ = httpGet(t, u, map[string]string{"Authorization": "Bearer wrong"})
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, u)
		resp, body := httpGet(t, u, map[string]string{"Authorization": "Bearer s3cret-metrics-token"})
		assert.Equal(t, http.StatusOK, resp.StatusCode, u)
		assert.Contains(t, body, "quarantine_anonymous_denials_total")
	}
}

// TestReadyzHidesErrorText: with PostgreSQL refusing the console, /readyz
// names the dependency and nothing of the error (addresses, database and
// role names, codes); the log has the error.
func TestReadyzHidesErrorText(t *testing.T) {
	t.Parallel()
	a, base, logs := startApp(t, nil)
	resp, _ := httpGet(t, base+"/readyz", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// The administrator locks the database and ends its connections.
	var dbName string
	require.NoError(t, a.Pool.QueryRow(context.Background(), "SELECT current_database()").Scan(&dbName))
	adminURL, err := testdb.WithDatabase(testdb.ServerURL(t), "postgres")
	require.NoError(t, err)
	su, err := pgx.Connect(context.Background(), adminURL)
	require.NoError(t, err)
	defer su.Close(context.Background())
	_, err = su.Exec(context.Background(), fmt.Sprintf(`ALTER DATABASE %s CONNECTION LIMIT 0`, dbName))
	require.NoError(t, err)
	_, err = su.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, dbName)
	require.NoError(t, err)

	var body string
	wait.Until(t, "readyz to answer 503", 20*time.Second, func() bool {
		resp, body = httpGet(t, base+"/readyz", nil)
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	assert.JSONEq(t, `{"ready":false,"problems":["postgresql: not answering"]}`, body)
	for _, secret := range []string{dbName, "127.0.0.1", testdb.RuntimeRole, "SQLSTATE", "connections"} {
		assert.NotContains(t, body, secret)
	}
	assert.Contains(t, logs.String(), "not ready: PostgreSQL", "the log says why")
	_, err = su.Exec(context.Background(), fmt.Sprintf(`ALTER DATABASE %s CONNECTION LIMIT -1`, dbName))
	require.NoError(t, err)
}

// TestCredentialsRedactedInLogs: a NATS URL with a password, through a
// server restart (disconnect and reconnect logs), and PostgreSQL URLs with
// passwords in bad settings and failed connections never show the secret.
func TestCredentialsRedactedInLogs(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-s3cret"
	port := freeTCPPort(t)
	opts := &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
		Username: "console", Password: secret}
	ns := startNATSServer(t, opts)
	natsURL := fmt.Sprintf("nats://console:%s@127.0.0.1:%d", secret, port)
	a, _, logs := startApp(t, map[string]string{"NATS_URL": natsURL})
	require.True(t, a.NATS.IsConnected())
	// Once the consumer is open, a restart is an outage, not a failed start.
	wait.Until(t, "ingest to start", 30*time.Second, func() bool { return strings.Contains(logs.String(), "msg=ingesting") })
	ns.Shutdown()
	ns.WaitForShutdown()
	startNATSServer(t, opts)
	wait.Until(t, "a NATS reconnect", 30*time.Second, func() bool { return strings.Contains(logs.String(), "NATS reconnected") })
	assert.Contains(t, logs.String(), "NATS disconnected")
	assert.NotContains(t, logs.String(), secret)

	// Settings and connection errors that carry URLs.
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"console", "serve"}, map[string]string{"DATABASE_URL": "mysql://app:" + secret + "@db/x", "OIDC_ISSUER": "http://127.0.0.1:1", "OIDC_CLIENT_ID": "c"}},
		{[]string{"console", "serve"}, map[string]string{"DATABASE_URL": "postgres://app@db/x", "NATS_URL": "http://u:" + secret + "@nats", "OIDC_ISSUER": "http://127.0.0.1:1", "OIDC_CLIENT_ID": "c"}},
		{[]string{"console", "migrate"}, map[string]string{"MIGRATE_DATABASE_URL": "postgres://owner:" + secret + "@127.0.0.1:1/x?connect_timeout=1"}},
		{[]string{"console", "worker"}, map[string]string{"DATABASE_URL": "postgres://app:" + secret + "@127.0.0.1:1/x?connect_timeout=1",
			"NATS_URL": "nats://tok" + secret + "@127.0.0.1:1", "POLICY_FILE": "../../dev/policy.toml"}},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), tc.args, env(tc.env), io.Discard, &stderr)
		require.Error(t, err, tc.args)
		shown := app.Redact(err.Error()) // what main prints
		assert.NotContains(t, shown, secret, "%v: %s", tc.args, shown)
		assert.NotContains(t, stderr.String(), secret)
	}
	// The redaction itself, for the shapes credentials come in.
	for in, want := range map[string]string{
		"postgres://app:pw@db:5432/x?sslmode=disable":   "postgres://app:xxxxx@db:5432/x?sslmode=disable",
		"nats://a:pw@n1:4222,nats://b:pw@n2:4222":       "nats://a:xxxxx@n1:4222,nats://b:xxxxx@n2:4222",
		"nats://s3cr3ttoken@n1:4222":                    "nats://xxxxx@n1:4222",
		"postgres://app@db/x":                           "postgres://app@db/x",
		"host=db user=app password=pw dbname=x":         "host=db user=app password=xxxxx dbname=x",
		"connect to https://idp/?client_secret=abc&x=1": "connect to https://idp/?client_secret=xxxxx&x=1",
	} {
		assert.Equal(t, want, app.Redact(in), in)
	}
}

// TestSecureCookieBehindTLS: with TLS ended in front (or an https public
// URL), the console's cookies (here the sign-in's, which carries its state
// until the callback; the session cookie takes the same settings from the
// same configuration) are Secure with the __Host- prefix and responses
// carry HSTS; plain http on loopback has neither; http on an address other
// machines reach logs a warning at start.
func TestSecureCookieBehindTLS(t *testing.T) {
	t.Parallel()
	cookieOf := func(base string) *http.Cookie {
		resp, _ := httpGet(t, base+"/auth/login", nil) // starts a sign-in: its cookie is set
		require.Equal(t, http.StatusFound, resp.StatusCode)
		for _, c := range resp.Cookies() {
			if strings.Contains(c.Name, "quarantine_login_") {
				return c
			}
		}
		t.Fatalf("no sign-in cookie: %v", resp.Header)
		return nil
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"TLSTerminated", map[string]string{"CONSOLE_PUBLIC_URL": "https://console.example.com", "POLICY_FILE": ownPolicyFile(t)}, []string{"--tls-terminated"}},
		{"HTTPSPublicURL", map[string]string{"CONSOLE_PUBLIC_URL": "https://console.example.com", "POLICY_FILE": ownPolicyFile(t)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, base, logs := startApp(t, tc.env, tc.args...)
			c := cookieOf(base)
			assert.True(t, strings.HasPrefix(c.Name, "__Host-quarantine_login_"), c.Name)
			assert.True(t, c.Secure)
			assert.True(t, c.HttpOnly)
			assert.Equal(t, "/", c.Path)
			assert.Empty(t, c.Domain)
			resp, _ := httpGet(t, base+"/healthz", nil)
			assert.Equal(t, "max-age=31536000", resp.Header.Get("Strict-Transport-Security"))
			assert.NotContains(t, logs.String(), "travel unencrypted")
		})
	}
	t.Run("PlainHTTPOnLoopback", func(t *testing.T) {
		_, base, logs := startApp(t, nil)
		c := cookieOf(base)
		assert.True(t, strings.HasPrefix(c.Name, "quarantine_login_"), c.Name)
		assert.False(t, c.Secure)
		resp, _ := httpGet(t, base+"/healthz", nil)
		assert.Empty(t, resp.Header.Get("Strict-Transport-Security"))
		assert.NotContains(t, logs.String(), "travel unencrypted")
	})
	t.Run("PlainHTTPElsewhereWarns", func(t *testing.T) {
		_, _, logs := startApp(t, map[string]string{"CONSOLE_PUBLIC_URL": "http://console.example.com"})
		assert.Contains(t, logs.String(), "travel unencrypted")
	})
	t.Run("TLSTerminatedNeedsHTTPSURL", func(t *testing.T) {
		_, err := parseServe([]string{"--tls-terminated"}, env(map[string]string{"DATABASE_URL": "postgres://x@h/db",
			"OIDC_ISSUER": "http://127.0.0.1:1", "OIDC_CLIENT_ID": "c", "AUDIT_SIGNING_KEY_FILE": newKeyFile(t)}), io.Discard)
		assert.ErrorContains(t, err, "CONSOLE_PUBLIC_URL (--public-url) \"\" is not https")
	})
}

// TestStatementTimeoutAndBodyLimit: each pool's connections end statements
// that run past its timeout; requests are refused with 413 when they declare
// more than their route class's body limit, and past 64 KiB of headers.
func TestStatementTimeoutAndBodyLimit(t *testing.T) {
	t.Parallel()
	a, base, _ := startApp(t, map[string]string{"DATABASE_STATEMENT_TIMEOUT": "300ms", "DATABASE_WORKER_STATEMENT_TIMEOUT": "700ms"})
	ctx := context.Background()
	var got string
	require.NoError(t, a.Pool.QueryRow(ctx, "SHOW statement_timeout").Scan(&got))
	assert.Equal(t, "300ms", got)
	require.NoError(t, a.Jobs.QueryRow(ctx, "SHOW statement_timeout").Scan(&got))
	assert.Equal(t, "700ms", got)
	require.NoError(t, a.Pool.QueryRow(ctx, "SHOW idle_in_transaction_session_timeout").Scan(&got))
	assert.Equal(t, "1min", got)
	_, err := a.Pool.Exec(ctx, "SELECT pg_sleep(2)")
	assert.ErrorContains(t, err, "statement timeout")
	_, err = a.Jobs.Exec(ctx, "SELECT pg_sleep(0.4)")
	assert.NoError(t, err, "the workers' pool allows longer")
	_, err = a.Jobs.Exec(ctx, "SELECT pg_sleep(2)")
	assert.ErrorContains(t, err, "statement timeout")

	post := func(path string, body io.Reader, size int64) int {
		req, err := http.NewRequest(http.MethodPost, base+path, body)
		require.NoError(t, err)
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	form := "reason=" + strings.Repeat("x", 70<<10)
	assert.Equal(t, http.StatusRequestEntityTooLarge, post("/admin/bindings", strings.NewReader(form), int64(len(form))), "declared too large")
	// A chunked body declares no length: nobody signed in, it is never read
	// (the form is parsed only after sign-in and the route's permission).
	assert.Equal(t, http.StatusUnauthorized, post("/admin/bindings", io.MultiReader(strings.NewReader(form)), -1), "chunked, not read before sign-in")
	assert.Equal(t, http.StatusUnauthorized, post("/admin/bindings", strings.NewReader("email=a"), 7), "a small form reaches the sign-in check")
	// The payload edit route takes forms of the largest edit, URL-encoded
	// (3 x replay.MaxEditablePayload + a form's 64 KiB), and no more.
	big := "payload=" + strings.Repeat("%7B", replay.MaxEditablePayload)
	assert.Equal(t, http.StatusUnauthorized, post("/replay/requests/1/items/1/payload", strings.NewReader(big), int64(len(big))))
	huge := "payload=" + strings.Repeat("a", 3*replay.MaxEditablePayload+(128<<10))
	assert.Equal(t, http.StatusRequestEntityTooLarge, post("/replay/requests/1/items/1/payload", strings.NewReader(huge), int64(len(huge))))
	resp, _ := httpGet(t, base+"/healthz", map[string]string{"X-Big": strings.Repeat("h", 100<<10)})
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
}

// freeTCPPort returns a loopback port nobody listens on now.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	return ports.Free(t)
}

func startNATSServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	ns, err := server.NewServer(opts)
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second))
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

// TestServeChecksSchemaAndRole: serve never migrates. It refuses an empty
// or older schema (naming console migrate) and a DATABASE_URL role that
// could alter the audit log; console migrate, as the owner, fixes the first.
func TestServeChecksSchemaAndRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	base := map[string]string{"OIDC_ISSUER": "http://127.0.0.1:1/dex", "OIDC_CLIENT_ID": "c", "AUDIT_SIGNING_KEY_FILE": newKeyFile(t),
		"POLICY_FILE": "../../dev/policy.toml", "DATABASE_WAIT": "0s", "METRICS_ADDR": "off"}
	serve := func(dsn string) error {
		e := map[string]string{"DATABASE_URL": dsn}
		for k, v := range base {
			e[k] = v
		}
		cfg, err := parseServe([]string{"--addr", "127.0.0.1:0"}, env(e), io.Discard)
		require.NoError(t, err)
		require.NoError(t, cfg.loadSecrets())
		a, err := app.New(ctx, cfg.Config, newLogger(io.Discard, "info", "text"))
		if a != nil {
			a.Close()
		}
		return err
	}
	err := serve(db.OwnerURL)
	require.ErrorIs(t, err, migrations.ErrPrivileged, "the owner is refused")
	assert.Contains(t, err.Error(), "owns the audit log")
	err = serve(db.AdminURL)
	require.ErrorIs(t, err, migrations.ErrPrivileged, "so is a superuser")
	assert.Contains(t, err.Error(), "is a superuser")

	// An empty database: nothing is migrated by serve.
	name := "qt_empty_" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "_")
	admin, err := pgx.Connect(ctx, db.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name))
	require.NoError(t, err)
	_, err = admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s OWNER %s", name, testdb.OwnerRole))
	require.NoError(t, err)
	t.Cleanup(func() { // after the deferred Close: a connection of its own
		c, err := pgx.Connect(context.Background(), db.AdminURL)
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	runtimeURL, err := testdb.AsRole(db.URL, name, testdb.RuntimeRole, "quarantine-test")
	require.NoError(t, err)
	ownerURL, err := testdb.AsRole(db.URL, name, testdb.OwnerRole, "quarantine-test")
	require.NoError(t, err)
	err = serve(runtimeURL)
	require.ErrorIs(t, err, migrations.ErrPending)
	assert.Contains(t, err.Error(), "run `console migrate` with MIGRATE_DATABASE_URL")

	err = run(ctx, []string{"console", "migrate"}, env(map[string]string{"MIGRATE_DATABASE_URL": runtimeURL}), io.Discard, io.Discard)
	require.Error(t, err, "the runtime role cannot migrate")
	var out bytes.Buffer
	require.NoError(t, run(ctx, []string{"console", "migrate"}, env(map[string]string{"MIGRATE_DATABASE_URL": ownerURL}), &out, io.Discard))
	assert.Contains(t, out.String(), "schema at version")
	err = serve(runtimeURL)
	require.Error(t, err, "the identity provider is not there, but the database checks passed")
	assert.NotErrorIs(t, err, migrations.ErrPending)
	assert.NotErrorIs(t, err, migrations.ErrPrivileged)
	assert.Contains(t, err.Error(), "OIDC_ISSUER")
}

// TestEmbeddedNATSLoopbackWithToken: the embedded server refuses any
// address but loopback, and admits only clients with its token (written to
// NATS_TOKEN_FILE, mode 0600, for other processes such as console demo).
func TestEmbeddedNATSLoopbackWithToken(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:4222", ":4222", "10.1.2.3:4222", "[::]:4222"} {
		_, err := parseServe(nil, env(map[string]string{"DATABASE_URL": "postgres://x@h/db", "OIDC_ISSUER": "http://127.0.0.1:1",
			"OIDC_CLIENT_ID": "c", "AUDIT_SIGNING_KEY_FILE": newKeyFile(t), "NATS_EMBEDDED_ADDR": addr}), io.Discard)
		assert.ErrorContains(t, err, "listens on loopback only", addr)
	}
	tokenFile := filepath.Join(t.TempDir(), "nats-token")
	a, _, _ := startApp(t, map[string]string{"NATS_TOKEN_FILE": tokenFile})
	st, err := os.Stat(tokenFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	token, err := app.ReadSecret(tokenFile)
	require.NoError(t, err)
	assert.Len(t, token, 64)

	_, err = nats.Connect(a.NATSURL(), nats.MaxReconnects(0))
	require.Error(t, err, "no token, no connection")
	assert.Contains(t, strings.ToLower(err.Error()), "authorization")
	_, err = nats.Connect(a.NATSURL(), nats.Token("guess"), nats.MaxReconnects(0))
	require.Error(t, err)
	nc, _, err := app.DialNATS(a.NATSURL(), tokenFile, "test")
	require.NoError(t, err, "the demo's way in")
	nc.Close()
}

// TestAuditCheckpointCommands: keygen, checkpoint and verify from the
// command line, with the public key and with anchors.
func TestAuditCheckpointCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	key := newKeyFile(t)
	e := env(map[string]string{"DATABASE_URL": db.URL})
	for i := range 3 {
		_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.event", Outcome: audit.OutcomeOK, Reason: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	var out bytes.Buffer
	require.NoError(t, run(ctx, []string{"console", "audit", "checkpoint", "--audit-signing-key", key}, e, &out, io.Discard))
	m := regexp.MustCompile(`anchor: (3:[0-9a-f]{64})`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	anchor := m[1]

	out.Reset()
	var stderr bytes.Buffer
	err := run(ctx, []string{"console", "audit", "verify"}, e, &out, &stderr)
	require.Error(t, err, "checkpoints without a key to check them")
	assert.Equal(t, exitUnchecked, exitCode(err), "a check not made, not tampering")
	assert.Contains(t, stderr.String(), "--public-key")

	out.Reset()
	require.NoError(t, run(ctx, []string{"console", "audit", "verify", "--public-key", key + ".pub", "--anchor", anchor}, e, &out, io.Discard))
	assert.Contains(t, out.String(), "audit chain ok: 3 entries")
	assert.Contains(t, out.String(), "1 signed checkpoint verifies, the last at seq 3")
	assert.Contains(t, out.String(), "1 anchor matches")

	wrong := "2:" + strings.Repeat("0", 64)
	err = run(ctx, []string{"console", "audit", "verify", "--public-key", key + ".pub", "--anchor", wrong}, e, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "anchor at seq 2")
	err = run(ctx, []string{"console", "audit", "verify", "--public-key", newKeyFile(t) + ".pub"}, e, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not one of the public keys given")
	err = run(ctx, []string{"console", "audit", "verify", "--anchor", "nonsense"}, e, io.Discard, io.Discard)
	assert.ErrorContains(t, err, "AUDIT_ANCHORS (--anchor)")
	err = run(ctx, []string{"console", "audit", "keygen", "--out", key}, env(nil), io.Discard, io.Discard)
	assert.ErrorContains(t, err, "exists", "keygen never overwrites a key")
}
