package replay_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestReconcileSettlesOnlyTheAttemptItWasShown: every PubAck of an item is
// lost, so its first attempt ends as needs_reconciliation (episode 0); a
// person settles it "not applied, republish", and the attempt published
// again ends the same way (episode 1). A decision made on a page that
// showed episode 0 is a conflict (ErrReconcileLaterAttempt): nothing is
// settled or audited; one made about episode 1 settles it.
func TestReconcileSettlesOnlyTheAttemptItWasShown(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	reqID, id := b.firstPublishLost(t, w, "two-attempts")
	loseAcks(w, 1<<30)
	waiting := func(episode int32) {
		t.Helper()
		wait.Until(t, "the attempt's outcome to wait for a person", time.Minute, func() bool {
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)
			j := b.job(t, reqID, id)
			require.NotEqual(t, "replayed", j.State, j.Result)
			return j.State == "needs_reconciliation"
		})
		var settled int32
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT settled FROM replay_jobs WHERE request_id = $1`, reqID).Scan(&settled))
		require.Equal(t, episode, settled)
	}
	decided := func() int {
		var n int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'replay.item.reconciled' AND outcome = 'ok'`).Scan(&n))
		return n
	}
	episode := func(n int32) *int32 { return &n }

	waiting(0)
	require.NoError(t, b.replays.Reconcile(ctx, reqID, id, approver1,
		replay.ReconcileInput{Choice: replaypolicy.Republish, Note: "the index has no two-attempts", Settled: episode(0)}, quarantine.RequestMeta{}))
	waiting(1)

	t.Run("StaleEpisode", func(t *testing.T) {
		before := decided()
		err := b.replays.Reconcile(ctx, reqID, id, approver2,
			replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "the index had no two-attempts at 03:00", Settled: episode(0)}, quarantine.RequestMeta{})
		assert.True(t, errors.Is(err, replay.ErrReconcileLaterAttempt), "%v", err)
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err))
		assert.Equal(t, "needs_reconciliation", b.job(t, reqID, id).State, "attempt 2 waits for a decision about itself")
		assert.Equal(t, before, decided(), "nothing settled")
	})
	t.Run("Success", func(t *testing.T) {
		require.NoError(t, b.replays.Reconcile(ctx, reqID, id, approver2,
			replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "the index has no two-attempts at 03:12", Settled: episode(1)}, quarantine.RequestMeta{}))
		assert.Equal(t, "cancelled", b.job(t, reqID, id).State)
	})
}
