package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRev39RetryStoredPastTheWindowNeedsAPersonWhateverTheConsoleClock:
// a retry after a lost PubAck passes every check on the database's clock
// but reaches the broker after the target's duplicate window stopped
// covering the first publish (the hook just before the send holds it
// there), and the broker stores it as a second message. Whether the
// earlier publish landed too is unknown, so a person decides, whether the
// console's clock is right or a few seconds behind the database's: the
// first publish's time is the database's, and the answer is judged on it.
func TestRev39RetryStoredPastTheWindowNeedsAPersonWhateverTheConsoleClock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lag  time.Duration // how far the console's clock is behind the database's
	}{
		{"ConsoleClockRight", 0},
		{"ConsoleClockTenSecondsBehind", 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			ctx := context.Background()
			cfg := b.target.CachedInfo().Config
			cfg.Duplicates = 5 * time.Second
			_, err := b.js.UpdateStream(ctx, cfg)
			require.NoError(t, err)
			msgID := "rev39-lagging-" + tc.name
			w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
			req, id := b.firstPublishLost(t, w, msgID)
			first := b.job(t, req, id).FirstAttemptAt
			require.NotNil(t, first)
			_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, req)
			require.NoError(t, err)
			if tc.lag > 0 {
				behind := time.Now().Add(-tc.lag)
				b.now.Store(&behind)
			}
			// The retry has passed every check; it is held past the window
			// before it leaves (the scenario itself, not a wait for a
			// condition).
			w.Leaving(func(int64) { time.Sleep(time.Until(first.Add(cfg.Duplicates + 700*time.Millisecond))) })
			j := b.settled(t, w, req, id)
			require.Equal(t, 2, b.publishedAs(t, msgID), "the broker stored the retry as a second message")
			require.Equal(t, "needs_reconciliation", j.State, j.Result)
			require.Contains(t, j.Result, "no longer covers the first publish")
		})
	}
}
