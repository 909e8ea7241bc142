package web

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPgCheckSharesOneAnswer: probes share the check that runs, reuse its
// answer for readyReuse, and wait for it only as long as their context
// lets them.
func TestPgCheckSharesOneAnswer(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	// clock is a fake now, moved by the subtests; checks end "at" it.
	type clock struct{ offset atomic.Int64 }
	nowOf := func(c *clock) func() time.Time {
		return func() time.Time { return start.Add(time.Duration(c.offset.Load())) }
	}

	t.Run("ConcurrentProbesRunOneCheck", func(t *testing.T) {
		t.Parallel()
		var p SharedCheck
		var c clock
		var checks atomic.Int32
		release := make(chan struct{})
		check := func(context.Context) error {
			checks.Add(1)
			<-release
			return nil
		}
		const probes = 50
		var wg sync.WaitGroup
		errs := make([]error, probes)
		for i := range probes {
			wg.Go(func() { errs[i] = p.answer(context.Background(), nowOf(&c), check) })
		}
		close(release)
		wg.Wait()
		for _, err := range errs {
			assert.NoError(t, err)
		}
		// Probes that came after the check ended took its answer: the
		// clock did not move.
		assert.Equal(t, int32(1), checks.Load())
	})

	t.Run("AnswerReusedUntilReadyReuse", func(t *testing.T) {
		t.Parallel()
		var p SharedCheck
		var c clock
		var checks atomic.Int32
		down := errors.New("connection refused")
		check := func(context.Context) error {
			if checks.Add(1) == 1 {
				return down
			}
			return nil
		}
		now := nowOf(&c)
		require.ErrorIs(t, p.answer(context.Background(), now, check), down)
		c.offset.Store(int64(readyReuse - time.Millisecond))
		assert.ErrorIs(t, p.answer(context.Background(), now, check), down, "a failure is reused too")
		assert.Equal(t, int32(1), checks.Load())
		c.offset.Store(int64(readyReuse))
		assert.NoError(t, p.answer(context.Background(), now, check), "an answer readyReuse old is asked again")
		assert.Equal(t, int32(2), checks.Load())
	})

	t.Run("WaitingProbeKeepsItsBudget", func(t *testing.T) {
		t.Parallel()
		var p SharedCheck
		var c clock
		release := make(chan struct{})
		checkEnded := make(chan error, 1)
		check := func(ctx context.Context) error {
			select {
			case <-release:
				checkEnded <- nil
				return nil
			case <-ctx.Done():
				checkEnded <- ctx.Err()
				return ctx.Err()
			}
		}
		now := nowOf(&c)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, p.answer(ctx, now, check), context.DeadlineExceeded, "the probe leaves at its deadline")
		// The check goes on for the probes that come next.
		answered := make(chan error, 1)
		go func() { answered <- p.answer(context.Background(), now, check) }()
		close(release)
		assert.NoError(t, <-checkEnded, "the check outlives the probe that started it")
		assert.NoError(t, <-answered)
	})
}
