package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixOps13DrainClosesKeptAliveConnections: while it drains, the
// console still answers, but closes each connection after its response,
// so that a client's next request goes to a replica that is ready.
func TestFixOps13DrainClosesKeptAliveConnections(t *testing.T) {
	t.Parallel()
	srv := natstest.StartWithOptions(t, t.TempDir(), nil)
	cfg := consoleConfig(t, srv.ClientURL())
	cfg.ShutdownDrain = 3 * time.Second
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	get := func(path string) *http.Response {
		resp, err := http.Get(a.URL() + path)
		if err != nil {
			return nil
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	wait.Until(t, "ready", 30*time.Second, func() bool { r := get("/readyz"); return r != nil && r.StatusCode == http.StatusOK })
	assert.False(t, get("/healthz").Close, "kept alive while serving")

	cancel()
	wait.Until(t, "/readyz to answer 503 once asked to stop", 3*time.Second, func() bool {
		r := get("/readyz")
		return r != nil && r.StatusCode == http.StatusServiceUnavailable
	})
	r := get("/healthz")
	require.NotNil(t, r)
	assert.Equal(t, http.StatusOK, r.StatusCode)
	assert.True(t, r.Close, "a response while draining keeps its connection open")
	require.NoError(t, <-done)
}
