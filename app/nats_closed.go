package app

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// natsEnd reports a NATS connection the client closed for good while the
// process still runs: nats.go ends a connection without reconnecting
// after some -ERRs of the server (a message over a max_payload lowered
// since the connection was made, "Maximum Payload Violation", among
// them), and then ingest, replays and window reads all stop on it.
//
// The process then stops (Run returns the error, so the process exits
// non-zero) rather than dial a new connection in place: the connection is
// wired into the ingester's consumer, the replay workers, the window
// reader and the probes, and swapping it under them while they run would
// leave some on the old one; a restart by the supervisor (systemd,
// Kubernetes) wires everything to a new one, and the replay workers'
// leases hand their jobs to the next claim. Until it has stopped,
// /readyz fails (the connection does not come back by itself).
type natsEnd struct {
	lost     chan error
	stopping atomic.Bool
}

func newNATSEnd() *natsEnd { return &natsEnd{lost: make(chan error, 1)} }

// option is the connection option that reports its end (unless the
// process closes it itself: stop).
func (e *natsEnd) option(log *slog.Logger) nats.Option {
	return nats.ClosedHandler(func(nc *nats.Conn) {
		if e.stopping.Load() {
			return
		}
		log.Error("NATS connection closed for good; stopping", "err", nc.LastError())
		select {
		case e.lost <- closedForGood(nc):
		default:
		}
	})
}

// closedForGood is the error Run ends with when nc was closed for good.
func closedForGood(nc *nats.Conn) error {
	return fmt.Errorf("NATS: the connection was closed for good (last error: %v) and does not reconnect: "+
		"the process stops so that its supervisor starts it again with a new connection", nc.LastError())
}

// endedBy says why Run ends when nc was closed for good while it ran and
// not by the process itself: the close, with what failed on it (failed,
// e.g. the ingester that could no longer open its consumer), whichever
// reported first; nil otherwise.
func (e *natsEnd) endedBy(nc *nats.Conn, failed error) error {
	if nc == nil || !nc.IsClosed() || e.stopping.Load() {
		return nil
	}
	return errors.Join(closedForGood(nc), failed)
}

// stop says that the process closes the connection itself (shutdown):
// that end is not reported.
func (e *natsEnd) stop() { e.stopping.Store(true) }
