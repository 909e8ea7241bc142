package app_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixOps12ReadyzFailsWhileDraining: asked to stop, the console first
// answers /readyz 503 "shutting down" for SHUTDOWN_DRAIN while it still
// serves (a load balancer's readiness probe takes it out before the
// listener closes, so requests are neither cut off nor refused), then
// stops.
func TestFixOps12ReadyzFailsWhileDraining(t *testing.T) {
	t.Parallel()
	srv := natstest.StartWithOptions(t, t.TempDir(), nil)
	const drain = 3 * time.Second
	cfg := consoleConfig(t, srv.ClientURL())
	cfg.ShutdownDrain = drain
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	status := func(path string) int {
		resp, err := http.Get(a.URL() + path)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	wait.Until(t, "ready", 30*time.Second, func() bool { return status("/readyz") == http.StatusOK })

	stopped := time.Now()
	cancel()
	wait.Until(t, "/readyz to answer 503 once asked to stop", drain, func() bool { return status("/readyz") == http.StatusServiceUnavailable })
	assert.Equal(t, http.StatusOK, status("/healthz"), "still serving while it drains")
	select {
	case err := <-done:
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(stopped), drain, "the listener closed only after the drain")
	case <-time.After(30 * time.Second):
		t.Fatal("the console did not stop after its drain")
	}
}

// consoleConfig is the configuration of a console on natsURL, a fresh
// database and Dex (testidp), as the tests of this package
// start one.
func consoleConfig(t *testing.T, natsURL string) app.Config {
	t.Helper()
	db := testdb.New(t)
	oidc := testidp.Start(t)
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return app.Config{
		Version: "test", Addr: "127.0.0.1:0", DatabaseURL: db.URL, DBWait: 10 * time.Second,
		NATSURL: natsURL, Prefix: dlq.DefaultSubjectPrefix, Stream: "DLQ", Replicas: 1,
		BatchSize: 1000, IngestWorkers: 1, BatchWait: 20 * time.Millisecond, AckWait: time.Minute,
		OIDC:     authz.OIDCConfig{Issuer: oidc.Issuer, ClientID: oidc.ClientID, ClientSecret: oidc.ClientSecret, GroupsClaim: "groups"},
		OIDCWait: 10 * time.Second, IdleTimeout: time.Hour, Lifetime: 12 * time.Hour,
		Groups: authz.GroupMap{Prefix: testfactory.GroupPrefix}, AuditSigner: audit.NewSigner(priv), MetricsAddr: app.MetricsOff,
		Replay: app.ReplayConfig{PolicyFile: testfactory.PolicyFile(), Lease: 30 * time.Second},
	}
}
