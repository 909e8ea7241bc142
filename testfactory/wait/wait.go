// Package wait is the one way tests wait: for a condition, with a
// deadline, never for a fixed time. It imports nothing of the project, so
// every test package may use it, the ones inside dlq too.
package wait

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// Interval is how often For and Until look again.
const Interval = 20 * time.Millisecond

// ErrNotYet is what a condition may return (wrapped, with what it saw)
// while it still waits.
var ErrNotYet = errors.New("not yet")

// stopped marks an error after which waiting is pointless.
type stopped struct{ err error }

func (s stopped) Error() string { return s.err.Error() }
func (s stopped) Unwrap() error { return s.err }

// Stop marks err as final: Poll returns it at once instead of waiting on
// (a process the test waits on has exited, say).
func Stop(err error) error { return stopped{err} }

// Poll calls cond every interval until it returns nil, and then returns
// nil. It returns cond's last error when timeout passes first, or at once
// when cond returns an error made with Stop.
func Poll(timeout, interval time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		var s stopped
		if errors.As(err, &s) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not after %s: %w", timeout, err)
		}
		time.Sleep(interval)
	}
}

// For fails t unless cond returns nil within timeout; the message names
// what it waited for and cond's last error.
func For(t testing.TB, what string, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := Poll(timeout, Interval, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Until is For with a condition that answers yes or no.
func Until(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	For(t, what, timeout, func() error {
		if cond() {
			return nil
		}
		return ErrNotYet
	})
}
