package app_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
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
	db := testdb.New(t)
	idp, err := mockoidc.Run()
	require.NoError(t, err)
	t.Cleanup(func() { _ = idp.Shutdown() })
	oidc := idp.Config()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	a, err := app.New(context.Background(), app.Config{
		Version: "test", Addr: "127.0.0.1:0", DatabaseURL: db.URL, DBWait: 10 * time.Second,
		NATSURL: srv.ClientURL(), Prefix: dlq.DefaultSubjectPrefix, Stream: "DLQ", Replicas: 1,
		BatchSize: 1000, IngestWorkers: 1, BatchWait: 20 * time.Millisecond, AckWait: time.Minute,
		OIDC:     authz.OIDCConfig{Issuer: oidc.Issuer, ClientID: oidc.ClientID, ClientSecret: oidc.ClientSecret, GroupsClaim: "groups"},
		OIDCWait: 10 * time.Second, IdleTimeout: time.Hour, Lifetime: 12 * time.Hour,
		Groups: authz.GroupMap{Prefix: testfactory.GroupPrefix}, AuditSigner: audit.NewSigner(priv), MetricsAddr: app.MetricsOff,
		Replay: app.ReplayConfig{PolicyFile: testfactory.PolicyFile(), Lease: 30 * time.Second},
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
