package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/logs"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestBadSettingNamesIt(t *testing.T) {
	t.Parallel()
	base := map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1/db", "OIDC_ISSUER": "http://127.0.0.1:1/dex", "OIDC_CLIENT_ID": "c"}
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"MissingDatabase", map[string]string{}, nil, "DATABASE_URL (--database-url)"},
		{"BadAddr", map[string]string{"CONSOLE_ADDR": "8080"}, nil, "CONSOLE_ADDR (--addr) \"8080\": must be host:port"},
		{"BadNATS", map[string]string{"NATS_URL": "http://x"}, nil, "NATS_URL (--nats-url)"},
		{"BadBatch", map[string]string{"INGEST_BATCH_SIZE": "lots"}, nil, "INGEST_BATCH_SIZE (--ingest-batch) \"lots\": must be a whole number from 1 to 10000"},
		{"BadWait", nil, []string{"--ingest-wait", "forever"}, "INGEST_MAX_WAIT (--ingest-wait) \"forever\""},
		{"BadStallAfter", map[string]string{"INGEST_STALL_AFTER": "soon"}, nil, "INGEST_STALL_AFTER (--ingest-stall-after) \"soon\""},
		{"BadWatch", map[string]string{"DLQ_WATCH_STREAMS": "A.B"}, nil, "DLQ_WATCH_STREAMS (--watch-streams)"},
		{"BadPrefix", map[string]string{"DLQ_SUBJECT_PREFIX": "dlq.>"}, nil, "DLQ_SUBJECT_PREFIX (--dlq-prefix)"},
		{"BadLevel", map[string]string{"LOG_LEVEL": "loud"}, nil, `LOG_LEVEL (--log-level) "loud": must be debug, info, warn or error`},
		{"MissingIssuer", map[string]string{"OIDC_ISSUER": ""}, nil, "OIDC_ISSUER (--oidc-issuer)"},
		{"BadIssuer", map[string]string{"OIDC_ISSUER": "dex"}, nil, "OIDC_ISSUER (--oidc-issuer) \"dex\": must be an http"},
		{"BadGroupMap", map[string]string{"AUTHZ_GROUP_ROLES": "ops=acme:king"}, nil, "AUTHZ_GROUP_ROLES (--group-roles)"},
		{"FlagBeatsEnv", map[string]string{"CONSOLE_ADDR": "127.0.0.1:1"}, []string{"--addr", "nope"}, "CONSOLE_ADDR (--addr) \"nope\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range base {
				e[k] = v
			}
			for k, v := range tc.env {
				e[k] = v
			}
			for k, v := range e {
				if v == "" || (tc.name == "MissingDatabase" && k == "DATABASE_URL") {
					delete(e, k)
				}
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"console", "serve"}, tc.args...), env(e), &stdout, &stderr)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
			assert.Equal(t, 1, exitCode(err))
		})
	}
}

func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"console", "frobnicate"}, env(nil), &out, &errOut)
	require.ErrorContains(t, err, `unknown command "frobnicate"`)
	assert.Contains(t, errOut.String(), "usage: console")
	assert.Equal(t, 2, exitCode(run(context.Background(), []string{"console"}, env(nil), io.Discard, io.Discard)))
	require.NoError(t, run(context.Background(), []string{"console", "version"}, env(nil), &out, io.Discard))
	assert.Contains(t, out.String(), "console dev")
}

// TestCommandHelpExitsZeroWithUsageOnly: "console <command> -h" prints
// the command's flags and exits 0, as a flag set that exits on error
// does; it printed "console: flag: help requested" after the usage and
// exited 2. A command with subcommands prints their list.
func TestCommandHelpExitsZeroWithUsageOnly(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{{"serve"}, {"worker"}, {"migrate"}, {"demo"}, {"audit", "verify"}, {"audit", "checkpoint"},
		{"audit", "keygen"}, {"policy", "status"}, {"policy", "show"}, {"policy", "rollback"}, {"retention", "forget-stream"}} {
		for _, h := range []string{"-h", "--help"} {
			t.Run(strings.Join(cmd, "_")+h, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				err := run(context.Background(), append(append([]string{"console"}, cmd...), h), env(nil), &stdout, &stderr)
				require.NoError(t, err, "exits 0")
				assert.Contains(t, stderr.String()+stdout.String(), "Usage of console "+strings.Join(cmd, " "))
				assert.Regexp(t, `\n  -[a-z]`, stderr.String()+stdout.String(), "the flags")
				assert.NotContains(t, stderr.String()+stdout.String(), "help requested")
			})
		}
	}
	for _, group := range []string{"audit", "policy", "retention"} {
		var stdout bytes.Buffer
		require.NoError(t, run(context.Background(), []string{"console", group, "-h"}, env(nil), &stdout, io.Discard), group)
		assert.Contains(t, stdout.String(), "console "+group+" ", "its subcommands")
	}
	var stdout bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"console", "-h"}, env(nil), &stdout, io.Discard))
	assert.Contains(t, stdout.String(), "usage: console")
}

func TestServeAnswersProbes(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	ctx := context.Background()
	a, base, logged := startApp(t, map[string]string{"NATS_URL": ns.ClientURL()}, "--watch-streams", "ORDERS")
	metricsURL := a.MetricsURL()

	get := func(path string) (int, string) {
		if !strings.HasPrefix(path, "http") {
			path = base + path
		}
		resp, err := http.Get(path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("/healthz")
	assert.Equal(t, http.StatusOK, code)
	code, body = get("/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = get(metricsURL)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "quarantine_ingest_store_errors_total")

	// A dead letter published now shows in the depth metric.
	_, err := a.JetStream.Publish(ctx, "dlq.acme.search.index_update", []byte("{}"))
	require.NoError(t, err)
	wait.Until(t, "the depth metric to show the dead letter", 20*time.Second, func() bool {
		_, body = get(metricsURL)
		return strings.Contains(body, `quarantine_depth{error_class="unclassified",item_type="search.index_update",status="quarantined",tenant="acme"} 1`)
	})
	assert.Contains(t, body, `quarantine_oldest_unresolved_age_seconds{tenant="acme"}`)
	assert.Contains(t, body, "quarantine_replay_jobs_waiting 0")
	assert.Contains(t, body, "quarantine_replay_policy_stale 0")
	// The DLQ lag, from the ingest consumer's checks (the first one runs at start).
	for _, series := range []string{`quarantine_ingest_pending_messages{stream="DLQ"}`, `quarantine_ingest_oldest_unacked_age_seconds{stream="DLQ"}`,
		`quarantine_ingest_pending_messages{stream="DLQ_ADVISORIES"}`} {
		assert.Contains(t, body, series)
	}

	// NATS gone: still ready (the pages work; every replica shares the one
	// NATS, so failing would take them all out of the load balancer), and
	// the body says what is degraded. The client learns that its
	// connection closed from its read loop, a moment after the server went
	// (longer on a loaded machine): the answer follows the client.
	ns.Shutdown()
	ns.WaitForShutdown()
	wait.Until(t, "readyz to say NATS is not connected once it is gone", 30*time.Second, func() bool {
		code, body = get("/readyz")
		return strings.Contains(body, "nats: not connected")
	})
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"degraded"`)
	for range 5 {
		code, _ = get("/readyz")
		assert.Equal(t, http.StatusOK, code)
	}
	assert.Equal(t, 1, strings.Count(logged.String(), "degraded: NATS is not connected"), "said when NATS went, not at every probe")
}

func TestAuditVerifyCommand(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	for i := range 5 {
		_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.event", Outcome: audit.OutcomeOK, Reason: fmt.Sprint("r", i)})
		require.NoError(t, err)
	}
	var out bytes.Buffer
	e := env(map[string]string{"DATABASE_URL": db.URL})
	require.NoError(t, run(ctx, []string{"console", "audit", "verify"}, e, &out, io.Discard))
	assert.Contains(t, out.String(), "audit chain ok: 5 entries")

	// The owner, who may disable triggers, edits a row.
	_, err := db.OwnerPool.Exec(ctx, `ALTER TABLE audit_log DISABLE TRIGGER ALL;
        UPDATE audit_log SET reason = 'nothing to see' WHERE seq = 3;
        ALTER TABLE audit_log ENABLE TRIGGER ALL`)
	require.NoError(t, err)
	out.Reset()
	err = run(ctx, []string{"console", "audit", "verify"}, e, &out, io.Discard)
	require.Error(t, err)
	assert.Equal(t, 1, exitCode(err))
	assert.Contains(t, out.String(), "seq 3")
}

// startApp runs serve's wiring like main does, on a fresh database (as the
// runtime role), with Dex (testidp), a new signing key, and
// loopback ports; env and args override. It returns the app, its base URL
// and what it logged.
func startApp(t *testing.T, envOver map[string]string, args ...string) (*app.App, string, *logs.Buffer) {
	t.Helper()
	db := testdb.New(t)
	idp := testidp.Start(t)
	e := map[string]string{
		"DATABASE_URL": db.URL, "POLICY_FILE": "../../dev/policy.toml", "OIDC_ISSUER": idp.Issuer,
		"OIDC_CLIENT_ID": idp.ClientID, "OIDC_CLIENT_SECRET": idp.ClientSecret,
		"AUDIT_SIGNING_KEY_FILE": newKeyFile(t), "METRICS_ADDR": "127.0.0.1:0",
		"NATS_EMBEDDED_DIR": t.TempDir(), "NATS_EMBEDDED_ADDR": "127.0.0.1:0",
	}
	for k, v := range envOver {
		e[k] = v
	}
	cfg, err := parseServe(append([]string{"--addr", "127.0.0.1:0"}, args...), env(e), io.Discard)
	require.NoError(t, err)
	require.NoError(t, cfg.loadSecrets())
	logged := &logs.Buffer{}
	a, err := app.New(context.Background(), cfg.Config, newLogger(logged, "debug", "text"))
	require.NoError(t, err, logged.String())
	testfactory.Serve(t, a)
	return a, a.URL(), logged
}

// newKeyFile writes a new audit signing key and returns its path.
func newKeyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit-signing.pem")
	require.NoError(t, run(context.Background(), []string{"console", "audit", "keygen", "--out", path}, env(nil), io.Discard, io.Discard))
	return path
}

// TestUsageErrorsExitTwo: a command line a command does not take (an
// unknown flag, a flag without its value, a stray argument, an unknown
// command) exits with the usage status 2 and prints the flags, as
// "console" alone does; a bad value of a known setting exits 1.
func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"UnknownFlag":    {"serve", "--adr", "x"},
		"FlagNoValue":    {"worker", "--nats-url"},
		"StrayArgument":  {"migrate", "now"},
		"UnknownCommand": {"frobnicate"},
		"PolicyStray":    {"policy", "status", "extra"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			err := run(context.Background(), append([]string{"console"}, args...), env(nil), io.Discard, &stderr)
			require.Error(t, err)
			assert.Equal(t, 2, exitCode(err), "%v", err)
			assert.Contains(t, strings.ToLower(stderr.String()), "usage", "the usage is printed")
		})
	}
	err := run(context.Background(), []string{"console", "serve", "--retention-every", "30s"}, env(nil), io.Discard, io.Discard)
	require.Error(t, err)
	assert.Equal(t, 1, exitCode(err))
}

// TestDurationErrorSuggestsValuesInRange: a duration out of range is
// answered with its bounds and examples inside them (it suggested 50ms
// for a setting from 1m).
func TestDurationErrorSuggestsValuesInRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--retention-every", "30s"}, `RETENTION_EVERY (--retention-every) "30s": must be a duration from 1m to 24h, like 10m or 24h`},
		{[]string{"serve", "--db-wait", "1h"}, `must be a duration from 0s to 10m, like 30s or 10m`},
		{[]string{"serve", "--dlq-max-age", "-1s"}, `must be a duration from 0s to 87600h, like 1s or 87600h`},
		{[]string{"policy", "rollback", "--to", "abcdef12", "--reason", "x", "--for", "1s"}, `like 1h or`},
	} {
		err := run(context.Background(), append([]string{"console"}, tc.args...), env(map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1:1/db"}), io.Discard, io.Discard)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
		assert.NotContains(t, err.Error(), "50ms")
	}
}
