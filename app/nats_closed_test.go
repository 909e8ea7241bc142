package app_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/web"
)

// TestNATSClosedForGoodStopsTheConsole: a server whose max_payload was
// lowered (a config reload) answers a message over it with "-ERR Maximum
// Payload Violation" and closes the connection, which the client never
// reconnects. The console does not go on as if it would (ingest, replays
// and window reads all stopped on it): Run ends with the error, so the
// process exits for its supervisor to start it again, and /readyz fails
// naming the connection instead of saying "degraded".
func TestNATSClosedForGoodStopsTheConsole(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	var base server.Options
	srv := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) {
		o.Port, o.MaxPayload = port, 64<<10
		base = *o
	})
	a, err := app.New(context.Background(), consoleConfig(t, srv.ClientURL()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()

	lowered := base
	lowered.MaxPayload = 8 << 10
	require.NoError(t, srv.ReloadOptions(&lowered))
	require.NoError(t, a.NATS.Publish("app.acme.big", []byte(strings.Repeat("x", 20<<10)))) // the client still believes 64 KB
	select {
	case err := <-done:
		require.Error(t, err, "Run ended without an error on a connection closed for good")
		assert.Contains(t, err.Error(), "closed for good")
		assert.Contains(t, err.Error(), "Maximum Payload Violation")
	case <-time.After(30 * time.Second):
		t.Fatal("the console runs on a NATS connection closed for good")
	}

	rec := httptest.NewRecorder()
	a.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), web.NATSClosedProblem)
	assert.NotContains(t, rec.Body.String(), "degraded")
}
