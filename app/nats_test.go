package app

import (
	"errors"
	"testing"
	"time"

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
