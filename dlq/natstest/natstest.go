// Package natstest starts a real NATS server with JetStream inside the test
// process, on a random loopback port, storing under a temporary directory.
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server is a running in-process NATS server.
type Server struct {
	*server.Server
	StoreDir string
}

// Start runs a server for the test and shuts it down at cleanup. The
// payload limit is raised to 8 MiB so tests can send large dead letters.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWithStore(t, t.TempDir())
}

// StartWithStore runs a server whose JetStream data lives in dir, so a test
// can stop it and start another on the same data.
func StartWithStore(t testing.TB, dir string) *Server {
	t.Helper()
	return StartWithOptions(t, dir, nil)
}

// StartWithOptions is StartWithStore with the server's options changed by
// tweak (when not nil), e.g. a smaller MaxPayload.
func StartWithOptions(t testing.TB, dir string, tweak func(*server.Options)) *Server {
	t.Helper()
	opts := &server.Options{
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,
	}
	if tweak != nil {
		tweak(opts)
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("new nats server: %v", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(time.Minute) {
		t.Fatal("nats server not ready within a minute")
	}
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return &Server{Server: ns, StoreDir: dir}
}

// Connect opens a client connection and its JetStream context, closed at
// cleanup. Connecting, and a JetStream call whose context has no deadline,
// wait 30 s (not the client's 2 s and 5 s): a loaded machine answers late,
// and a test waits on what it asked, not on how fast.
func (s *Server) Connect(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.Timeout(30*time.Second))
	if err != nil {
		t.Fatalf("connect to nats: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(30*time.Second))
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	return nc, js
}
