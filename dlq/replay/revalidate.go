package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sony/gobreaker/v2"
)

// NATSRevalidator asks, by NATS request/reply on Subject, whether a
// revalidate item's original principal may still have its effect. The
// responder answers {"allow": true} or {"allow": false, "reason": "..."}.
// No responder, a timeout or a reply that is not that shape is an error.
// A circuit breaker stops asking a responder that keeps failing, so a dead
// service is not hammered: while open, every item is blocked at once.
type NATSRevalidator struct {
	nc      *nats.Conn
	subject string
	timeout time.Duration
	breaker *gobreaker.CircuitBreaker[[]byte]
}

// NewNATSRevalidator returns a revalidator on subject; timeout bounds each
// request (default 2s). After 5 consecutive failures of the service the
// breaker opens for 30 s; a question cut short by its asker (its context
// ended: the worker stops, the claim's time ran out) is not one, nor a
// success.
func NewNATSRevalidator(nc *nats.Conn, subject string, timeout time.Duration) *NATSRevalidator {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &NATSRevalidator{
		nc: nc, subject: subject, timeout: timeout,
		breaker: gobreaker.NewCircuitBreaker[[]byte](gobreaker.Settings{
			Name:        "revalidate " + subject,
			Timeout:     30 * time.Second,
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 5 },
			IsExcluded:  func(err error) bool { return errors.As(err, new(cutShort)) },
		}),
	}
}

// Revalidate implements Revalidator.
func (v *NATSRevalidator) Revalidate(ctx context.Context, q RevalidateQuery) (bool, string, error) {
	body, err := json.Marshal(q)
	if err != nil {
		return false, "", err
	}
	reply, err := v.breaker.Execute(func() ([]byte, error) {
		rctx, cancel := context.WithTimeout(ctx, v.timeout)
		defer cancel()
		m, err := v.nc.RequestWithContext(rctx, v.subject, body)
		if err != nil && ctx.Err() != nil {
			return nil, cutShort{err} // the asker's context, not the service
		}
		if err != nil {
			return nil, err
		}
		return m.Data, nil
	})
	switch {
	case errors.As(err, new(cutShort)):
		return false, "", fmt.Errorf("the question on %s was cut short: %w", v.subject, err)
	case errors.Is(err, nats.ErrNoResponders):
		return false, "", fmt.Errorf("no service answers on %s", v.subject)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return false, "", fmt.Errorf("no answer on %s within %s", v.subject, v.timeout)
	case errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests):
		return false, "", fmt.Errorf("%s keeps failing; not asking for a while (circuit open)", v.subject)
	case err != nil:
		return false, "", err
	}
	var ans struct {
		Allow  *bool  `json:"allow"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(reply, &ans); err != nil || ans.Allow == nil {
		return false, "", fmt.Errorf("the answer on %s is not {\"allow\": bool}", v.subject)
	}
	if !*ans.Allow && ans.Reason == "" {
		ans.Reason = "no reason given"
	}
	return *ans.Allow, ans.Reason, nil
}

// cutShort is a question its asker stopped waiting for (its context ended
// before the answer): the breaker counts it neither way.
type cutShort struct{ err error }

func (e cutShort) Error() string { return e.err.Error() }
func (e cutShort) Unwrap() error { return e.err }
