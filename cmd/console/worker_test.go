package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/logs"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestWorkerAnswersProbes: `console worker` serves /healthz, /readyz and
// /metrics (its policy gauge, Go and process series, behind
// METRICS_TOKEN_FILE's token) on METRICS_ADDR, says in /readyz and its log
// when its policy is stale or NATS is gone, and closes the listener when it stops. Before, an
// orchestrator could not probe it and its series went nowhere.
func TestWorkerAnswersProbes(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ns := natstest.Start(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	tokenFile := filepath.Join(t.TempDir(), "metrics-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("scrape-secret\n"), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &logs.Buffer{}, &logs.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"console", "worker"}, env(map[string]string{
			"DATABASE_URL": db.URL, "POLICY_FILE": "../../dev/policy.toml", "NATS_URL": ns.ClientURL(),
			"METRICS_ADDR": addr, "METRICS_TOKEN_FILE": tokenFile,
		}), stdout, stderr)
	}()

	get := func(path, token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	// /healthz answers while the worker starts (TestProbesWhileWaitingAtStart):
	// it has started when /readyz answers 200.
	var code int
	var body string
	var err error
	wait.Until(t, "the worker to answer /readyz", 2*time.Minute, func() bool {
		select {
		case err := <-done:
			t.Fatalf("the worker stopped: %v\n%s", err, stderr.String())
		default:
		}
		code, body, err = get("/readyz", "")
		return err == nil && code == http.StatusOK
	})
	wait.Until(t, "the worker to say where it listens", time.Minute, func() bool {
		return strings.Contains(stdout.String(), "/healthz, /readyz and /metrics on http://"+addr)
	})
	code, hbody, err := get("/healthz", "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", hbody)

	var ready map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &ready), body)
	assert.Equal(t, map[string]any{"ready": true}, ready, "its policy is the active one, NATS is connected")

	code, _, err = get("/metrics", "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, code, "/metrics needs the token")
	code, body, err = get("/metrics", "scrape-secret")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	for _, series := range []string{"quarantine_replay_policy_stale 0", "go_goroutines", "process_cpu_seconds_total"} {
		assert.Contains(t, body, series)
	}

	// Another version deployed elsewhere: this worker claims nothing until
	// its file has it, and says so without failing (a restart would not
	// mend it, and its alert reports it).
	_, err = db.Pool.Exec(context.Background(), `UPDATE replay_policy_active SET version = 'deployed-elsewhere'`)
	require.NoError(t, err)
	wait.Until(t, "readyz to say the policy is stale", 30*time.Second, func() bool {
		code, body, err = get("/readyz", "")
		return err == nil && strings.Contains(body, "replay policy: stale")
	})
	assert.Equal(t, http.StatusOK, code)
	_, body, err = get("/metrics", "scrape-secret")
	require.NoError(t, err)
	assert.Contains(t, body, "quarantine_replay_policy_stale 1")

	// NATS gone: logged, and still ready, NATS named under degraded.
	ns.Shutdown()
	ns.WaitForShutdown()
	wait.Until(t, "the worker to log that NATS disconnected", 30*time.Second, func() bool { return containsLine(stderr, "NATS disconnected") })
	wait.Until(t, "readyz to say NATS is not connected", 30*time.Second, func() bool {
		code, body, err = get("/readyz", "")
		return err == nil && strings.Contains(body, "nats: not connected")
	})
	assert.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal([]byte(body), &ready), body)
	assert.Equal(t, map[string]any{"ready": true, "degraded": []any{"replay policy: stale", "nats: not connected"}}, ready)

	cancel()
	require.NoError(t, receive(t, done, time.Minute))
	_, _, err = get("/healthz", "")
	assert.Error(t, err, "the listener closed with the worker")
}

// TestWorkerNeedsItsPolicyFile: a separate `console worker` refuses to start
// without POLICY_FILE, naming it, instead of executing under the development
// table serve defaults to for `make run`. serve keeps that default.
func TestWorkerNeedsItsPolicyFile(t *testing.T) {
	t.Parallel()
	stderr := &logs.Buffer{}
	err := run(context.Background(), []string{"console", "worker"}, env(map[string]string{
		"DATABASE_URL": "postgres://x@127.0.0.1:1/db", "NATS_URL": "nats://127.0.0.1:1", "METRICS_ADDR": "off",
	}), io.Discard, stderr)
	require.Error(t, err)
	assert.Contains(t, err.Error()+stderr.String(), "POLICY_FILE")
	assert.Contains(t, err.Error()+stderr.String(), "separate worker")

	var cfg app.Config
	s := newSettings("serve", env(map[string]string{}), io.Discard)
	s.replay(&cfg.Replay, 2, devPolicyFile, false)
	require.NoError(t, s.parse(nil))
	assert.Equal(t, devPolicyFile, cfg.Replay.PolicyFile)
}
