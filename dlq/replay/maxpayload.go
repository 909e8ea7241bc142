package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// A server whose max_payload was lowered after the console connected (a
// config reload; an account or user payload limit below the server's)
// does not tell the connection: the client still sends what it believes
// fits, and the server answers "-ERR 'Maximum Payload Violation'" and
// closes the connection, which nats.go takes as fatal (CLOSED, no
// reconnect). The message was never stored, but its PubAck is simply
// lost, and the worker would take it for one that may have landed
// (unknown), publish it again and close its connection again, and so
// would every replica that claims it. The server processes a
// connection's messages in order and stops at the first one over its
// limit, so a message is known to be the one refused only by its size: a
// message bigger than what the server takes now (serverLimit) was never
// stored; any other whose answer the close lost may have been.

// maxPayloadViolation is the server's -ERR for a message over its
// max_payload, as nats.go keeps it (Conn.LastError), lower-cased.
const maxPayloadViolation = "maximum payload violation"

// closedForSize reports whether nc was closed by the server for a message
// over its max_payload.
func closedForSize(nc *nats.Conn) bool {
	if nc == nil || !nc.IsClosed() {
		return false
	}
	err := nc.LastError()
	return err != nil && strings.Contains(strings.ToLower(err.Error()), maxPayloadViolation)
}

// lostAnswer reports whether err, a publish's error, leaves its outcome
// unknown (decideAck: Lost): no PubAck came, and nothing says why.
func lostAnswer(err error) bool {
	var unsent errNotSent
	refused, notSent := publishError(err)
	return err != nil && refused == "" && notSent == "" && !errors.As(err, &unsent) &&
		!errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders)
}

// serverLimit is the max_payload the server announces now, asked once
// (on a connection of its own) when a connection it closed for a message
// over it lost the answer to a publish.
type serverLimit struct {
	asked bool
	max   int64
	err   error
}

// refused is err, the lost answer to a publish of a message of size bytes
// on nc, or, when the server closed nc for a message over its max_payload
// and the message is bigger than the server takes now, why it was
// refused (errRefusedForSize: never stored). A message within the limit
// keeps err, with what the close says: it may have been stored before
// another message was refused.
func (l *serverLimit) refused(nc *nats.Conn, size int64, err error) error {
	if !closedForSize(nc) {
		return err
	}
	if !l.asked {
		l.asked = true
		l.max, l.err = announcedMaxPayload(nc)
	}
	switch {
	case l.err != nil:
		return fmt.Errorf("%w; the server closed the connection for a message over its max_payload, and what it takes now could not be read (%v), "+
			"so whether it was this message (%d bytes) is not known", err, l.err, size)
	case size > l.max:
		return errRefusedForSize{size: size, max: l.max, believed: nc.MaxPayload()}
	}
	return fmt.Errorf("%w; the server closed the connection for a message over its max_payload, but this one (%d bytes) is within the %d bytes it takes now: "+
		"it may have been stored before another was refused", err, size, l.max)
}

// announcedMaxPayload is the max_payload the server nc was connected to
// announces to a new connection (its INFO), read on a connection of its
// own with nc's options and none of its handlers (so that closing it says
// nothing to the process that watches nc). An account or user limit
// below the server's is not announced: a message within what it announces
// may still have been the one refused.
func announcedMaxPayload(nc *nats.Conn) (int64, error) {
	o := nc.Opts
	o.Name += " (max_payload probe)"
	o.AllowReconnect, o.RetryOnFailedConnect, o.MaxReconnect = false, false, 0
	o.Timeout = 2 * time.Second
	o.ClosedCB, o.DisconnectedCB, o.DisconnectedErrCB, o.ConnectedCB, o.ReconnectedCB, o.ReconnectErrCB = nil, nil, nil, nil, nil, nil
	o.AsyncErrorCB, o.DiscoveredServersCB, o.LameDuckModeHandler = nil, nil, nil
	probe, err := o.Connect()
	if err != nil {
		return 0, fmt.Errorf("connect to read max_payload: %w", err)
	}
	defer probe.Close()
	return probe.MaxPayload(), nil
}

// errRefusedForSize is a publish the server refused for its size: the
// message is bigger than the max_payload the server takes now, which is
// less than the connection was told when it connected.
type errRefusedForSize struct{ size, max, believed int64 }

func (e errRefusedForSize) Error() string {
	return fmt.Sprintf("the NATS server refused it for its size: the message is %d bytes with its headers, more than the server's max_payload of %d bytes now "+
		"(the console's connection was told %d when it connected: the limit was lowered since, and the server closed the connection: Maximum Payload Violation); "+
		"edit the payload down, or raise max_payload and replay it again", e.size, e.max, e.believed)
}

// answeredWindow is the window of the stream that stores subject now,
// read afresh, for a first attempt answered by stream (PubAck.Stream)
// though the claim's list named no stream for it; without a window
// reader, nothing is there to check the answer against, and it is
// taken as the answer's stream.
func (w *Worker) answeredWindow(ctx context.Context, subject, stream string) replaypolicy.Window {
	if w.svc.cfg.Windows == nil {
		return replaypolicy.Window{Stream: stream}
	}
	return w.svc.cfg.Windows.Fresh(ctx, subject)
}
