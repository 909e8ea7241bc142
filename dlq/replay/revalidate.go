package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sony/gobreaker/v2"

	"github.com/quarantine-console/quarantine/dlq"
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
	silence silence
}

// NewNATSRevalidator returns a revalidator on subject; timeout bounds each
// request (default 2s). After 5 consecutive failures of the service the
// breaker opens for 30 s. A question cut short by its asker (its context
// ended: the worker stops, the claim's time ran out) is not one, nor a
// success, unless the service had already left the questions asked of it
// unanswered for timeout in all (silence) and the asker's deadline cut
// it: a service that answers nothing then fails even where every question
// ends at the claim's deadline before its own timeout (a timeout about as
// long as the two thirds of REPLAY_LEASE a claim publishes in, or
// longer). A cancelled question (the worker stops) never counts.
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

// maxAnswerReason bounds the reason a service gives for a refusal, as the
// job's result and the dead letter's page show it.
const maxAnswerReason = 1000

// Revalidate implements Revalidator.
func (v *NATSRevalidator) Revalidate(ctx context.Context, q RevalidateQuery) (bool, string, error) {
	body, err := json.Marshal(q)
	if err != nil {
		return false, "", err
	}
	reply, err := v.breaker.Execute(func() ([]byte, error) {
		rctx, cancel := context.WithTimeout(ctx, v.timeout)
		defer cancel()
		v.silence.ask()
		m, err := v.nc.RequestWithContext(rctx, v.subject, body)
		silent := v.silence.done(err == nil)
		if err != nil && ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && silent >= v.timeout {
				return nil, unanswered{err, silent} // the service's, though the asker's deadline came first
			}
			return nil, cutShort{err} // the asker's context, not the service
		}
		if err != nil {
			return nil, err
		}
		return m.Data, nil
	})
	var quiet unanswered
	switch {
	case errors.As(err, &quiet):
		return false, "", fmt.Errorf("no answer on %s for %s of questions in all, at least its timeout (%s); the last one cut short by its asker's deadline",
			v.subject, quiet.silent.Round(time.Millisecond), v.timeout)
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
	return *ans.Allow, dlq.OutsideText(ans.Reason, maxAnswerReason), nil
}

// cutShort is a question its asker stopped waiting for (its context ended
// before the answer): the breaker counts it neither way.
type cutShort struct{ err error }

func (e cutShort) Error() string { return e.err.Error() }
func (e cutShort) Unwrap() error { return e.err }

// unanswered is a question cut short by its asker's deadline after the
// service had left the questions asked of it unanswered for its timeout
// in all (silence): the breaker counts it as a failure.
type unanswered struct {
	err    error
	silent time.Duration
}

func (e unanswered) Error() string { return e.err.Error() }
func (e unanswered) Unwrap() error { return e.err }

// silence is how long the service has left the questions asked of it
// unanswered since it last answered one: the time during which at least
// one question was waiting, added up over the stretches of asking (a
// time when nothing was asked is no silence of the service's), and
// counted again from zero at each answer. Questions asked at once (the
// workers of a process share a revalidator) count their common time
// once.
type silence struct {
	mu      sync.Mutex
	waiting int           // questions asked and not yet answered or given up
	since   time.Time     // when the stretch of asking began (waiting > 0), or the last answer came since
	before  time.Duration // silent time of the stretches before it
}

// ask notes that a question is asked now.
func (s *silence) ask() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting == 0 {
		s.since = time.Now()
	}
	s.waiting++
}

// done notes that a question asked (ask) ended, answered or not, and
// returns how long the service has been silent: zero when it answered.
func (s *silence) done(answered bool) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.waiting--
	if answered {
		s.since, s.before = now, 0
		return 0
	}
	silent := s.before + now.Sub(s.since)
	if s.waiting == 0 {
		s.before = silent // the stretch ends
	}
	return silent
}
