package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SetupWithin is Setup, tried again while JetStream cannot answer yet, for
// up to wait: a cluster electing its leaders (a node restarting, a quorum
// not yet formed) or a server too busy to answer within the client's
// timeout is not a reason for the console to exit. An answer that refuses
// what was asked (a stream whose subjects overlap another's, say) ends it
// at once.
func (in *Ingester) SetupWithin(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pause := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, min(time.Until(deadline), setupAttempt))
		err := in.Setup(actx)
		cancel()
		if err == nil || !jetStreamNotReady(err) || ctx.Err() != nil {
			return err
		}
		if time.Now().Add(pause).After(deadline) {
			return fmt.Errorf("%w (JetStream did not answer within %s, %d attempts)", err, wait, attempt)
		}
		in.log.Warn("waiting for JetStream", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// setupAttempt bounds one attempt of Setup (its calls wait for the
// context's deadline when it has one, not the client's timeout).
const setupAttempt = 15 * time.Second

// jetStreamNotReady reports whether err is JetStream not answering, or
// answering that it cannot serve yet (5xx: no leader, cluster not
// available), rather than refusing the request.
func jetStreamNotReady(err error) bool {
	var api *jetstream.APIError
	switch {
	case errors.As(err, &api):
		return api.Code >= 500
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionReconnecting):
		return true
	}
	return false
}
