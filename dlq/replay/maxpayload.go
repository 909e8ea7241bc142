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
// reconnect). The -ERR does not say which message it was about. The
// server processes a connection's messages in order and stops at the
// first one over its limit as it stood then, so a message sent before it
// may have been stored, under the limit the server held before the
// reload; its PubAck, on its way, is lost with the connection all the
// same. Its size says nothing of that: a message stored under the old
// limit is as big as the one refused, and the limit read now is not the
// one it was judged by. So no lost answer on such a connection proves
// that nothing landed: each one stays unknown (a Retry, its handed_at and
// first attempt kept, its dead letter held), and the unknown path takes
// it on: a retry while the duplicate window covers the first attempt,
// and a retry the judge finds over the limit (the process restarts on a
// new connection, which the server tells its max_payload) needs
// reconciliation (JudgeUnsent), naming both sizes.

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

// explained is err, the lost answer to a publish of a message of size
// bytes on nc, with what the close says when the server closed nc for a
// message over its max_payload: the limit it takes now and the message's
// size, so that the on-call knows what to check. The outcome stays
// unknown whatever the sizes (see above).
func (l *serverLimit) explained(nc *nats.Conn, size int64, err error) error {
	if !closedForSize(nc) {
		return err
	}
	if !l.asked {
		l.asked = true
		l.max, l.err = announcedMaxPayload(nc)
	}
	const which = "the server's error does not say which message it was about, so this one may have been stored before it"
	if l.err != nil {
		return fmt.Errorf("%w; the server closed the connection for a message over its max_payload (what it takes now could not be read: %v); "+
			"this one is %d bytes with its headers; %s", err, l.err, size, which)
	}
	return fmt.Errorf("%w; the server closed the connection for a message over its max_payload (%d bytes now; the connection was told %d when it connected); "+
		"this one is %d bytes with its headers; %s, under the limit it held then", err, l.max, nc.MaxPayload(), size, which)
}

// announcedMaxPayload is the max_payload the server nc was connected to
// announces to a new connection (its INFO), read on a connection of its
// own with nc's options and none of its handlers (so that closing it says
// nothing to the process that watches nc). An account or user limit
// below the server's is not announced.
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
