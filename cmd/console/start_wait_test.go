package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/logs"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestServeWaitsForNATSAtStart: NATS not answering yet when serve starts
// (started together, or restarting) is waited for, up to NATS_WAIT, as
// PostgreSQL is; before, serve exited at once.
func TestServeWaitsForNATSAtStart(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	idp := testidp.Start(t)
	port := freeTCPPort(t)
	cfg, err := parseServe([]string{"--addr", "127.0.0.1:0"}, env(map[string]string{
		"DATABASE_URL": db.URL, "POLICY_FILE": "../../dev/policy.toml", "OIDC_ISSUER": idp.Issuer,
		"OIDC_CLIENT_ID": idp.ClientID, "OIDC_CLIENT_SECRET": idp.ClientSecret,
		"AUDIT_SIGNING_KEY_FILE": newKeyFile(t), "METRICS_ADDR": "off",
		"NATS_URL": fmt.Sprintf("nats://127.0.0.1:%d", port), "NATS_WAIT": "2m",
	}), io.Discard)
	require.NoError(t, err)
	require.NoError(t, cfg.loadSecrets())
	logged := &logs.Buffer{}
	started := make(chan error, 1)
	go func() {
		a, err := app.New(context.Background(), cfg.Config, newLogger(logged, "debug", "text"))
		if err == nil {
			a.Close()
		}
		started <- err
	}()
	wait.Until(t, "serve to wait for NATS", time.Minute, func() bool { return containsLine(logged, "waiting for NATS") })
	startNATSServer(t, &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	require.NoError(t, receive(t, started, 2*time.Minute), logged.String())
}

// TestWorkerWaitsForNATSAtStart: `console worker` waits for NATS up to
// NATS_WAIT, as serve does.
func TestWorkerWaitsForNATSAtStart(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	port := freeTCPPort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &logs.Buffer{}, &logs.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"console", "worker"}, env(map[string]string{
			"DATABASE_URL": db.URL, "POLICY_FILE": "../../dev/policy.toml",
			"NATS_URL": fmt.Sprintf("nats://127.0.0.1:%d", port), "NATS_WAIT": "2m", "DATABASE_WAIT": "1m", "METRICS_ADDR": "off",
		}), stdout, stderr)
	}()
	wait.Until(t, "the worker to wait for NATS", time.Minute, func() bool { return containsLine(stderr, "waiting for NATS") })
	startNATSServer(t, &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	wait.Until(t, "the worker to run", 2*time.Minute, func() bool {
		select {
		case err := <-done:
			t.Fatalf("the worker stopped: %v\n%s", err, stderr.String())
		default:
		}
		return containsLine(stdout, "replay workers")
	})
	cancel()
	require.NoError(t, receive(t, done, time.Minute))
}

func containsLine(b *logs.Buffer, s string) bool {
	return strings.Contains(b.String(), s)
}

// receive waits up to timeout for ch's value.
func receive(t *testing.T, ch <-chan error, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(timeout):
		t.Fatalf("nothing within %s", timeout)
		return nil
	}
}
