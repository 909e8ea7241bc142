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

	"github.com/quarantine-console/quarantine/dlq/natstest"
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
