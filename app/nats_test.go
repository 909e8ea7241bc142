package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/testfactory/logs"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestDialNATSKeepsNothingWhileReconnecting: a publish on the connection
// `console worker` publishes replays on, while NATS is away, fails at once
// (nothing is kept to be sent once NATS is back, perhaps after a replay's
// duplicate window).
func TestDialNATSKeepsNothingWhileReconnecting(t *testing.T) {
	srv := natstest.Start(t)
	nc, _, err := DialNATS(srv.ClientURL(), "", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	srv.Shutdown()
	srv.WaitForShutdown()
	wait.Until(t, "the client to see NATS gone", time.Minute, func() bool { return !nc.IsConnected() })
	if err := nc.Publish("app.acme.x", []byte("x")); !errors.Is(err, nats.ErrReconnectBufExceeded) {
		t.Fatalf("publish while reconnecting: %v, want %v", err, nats.ErrReconnectBufExceeded)
	}
}

// TestWaitForNATSStopsOnRefusedToken: a server that refuses the token is
// not waited for (waiting does not mend a token); one not answering is.
func TestWaitForNATSStopsOnRefusedToken(t *testing.T) {
	srv := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.Authorization = "right" })
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	start := time.Now()
	err := WaitForNATS(context.Background(), srv.ClientURL(), token, 10*time.Minute, log)
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("WaitForNATS with a refused token: %v, want %v", err, nats.ErrAuthorization)
	}
	if waited := time.Since(start); waited > time.Minute {
		t.Fatalf("waited %s for a server that refuses the token", waited)
	}
	if err := os.WriteFile(token, []byte("right\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WaitForNATS(context.Background(), srv.ClientURL(), token, time.Second, log); err != nil {
		t.Fatalf("WaitForNATS with the right token: %v", err)
	}
}

// TestEmbeddedNATSNamesABusyAddress: NATS_EMBEDDED_ADDR taken by another
// process fails at once saying the address is in use (the server only
// logs its listener's error and goes on without one: the start waited 10
// seconds and said "did not start"); a free address starts.
func TestEmbeddedNATSNamesABusyAddress(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	a := &App{cfg: Config{NATSEmbeddedAddr: busy.Addr().String(), NATSEmbeddedDir: t.TempDir()}, log: slog.New(slog.DiscardHandler)}
	start := time.Now()
	err = a.startEmbeddedNATS("token")
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "NATS_EMBEDDED_ADDR "+busy.Addr().String()+": the address is in use") {
		t.Fatalf("embedded NATS on a busy address: %v, want the address named in use", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s to say the address is in use: it waited for a server that cannot listen", took)
	}

	a = &App{cfg: Config{NATSEmbeddedAddr: "127.0.0.1:0", NATSEmbeddedDir: t.TempDir()}, log: slog.New(slog.DiscardHandler)}
	if err := a.startEmbeddedNATS("token"); err != nil {
		t.Fatalf("embedded NATS on a free address: %v", err)
	}
	a.embedded.Shutdown()
}

// TestNATSEventsCloseIsNoDisconnect: closing the connection at shutdown
// logs that it closed, at info; it warned "NATS disconnected err=<nil>".
// A server that goes away is still a warning, with its error.
func TestNATSEventsCloseIsNoDisconnect(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	var logged logs.Buffer
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	closed := make(chan struct{})
	nc, err := nats.Connect(srv.ClientURL(), append(natsEvents(log), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	require.NoError(t, err)
	nc.Close()
	<-closed // the handlers run in order: the disconnect one has run
	assert.Contains(t, logged.String(), `level=INFO msg="NATS connection closed"`)
	assert.NotContains(t, logged.String(), "NATS disconnected")

	var lost logs.Buffer
	log = slog.New(slog.NewTextHandler(&lost, nil))
	other := natstest.Start(t)
	nc, err = nats.Connect(other.ClientURL(), append(natsEvents(log), nats.MaxReconnects(-1))...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	other.Shutdown()
	wait.Until(t, "the disconnect warning", time.Minute, func() bool { return strings.Contains(lost.String(), `level=WARN msg="NATS disconnected" err=`) })
	assert.NotContains(t, lost.String(), "err=<nil>")
}
