package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRetentionJudgesByTheLaterOfStoredAndArrived: a dead letter's age,
// for retention, is the later of when JetStream stored it and when the
// console did. Of a day 120 days past (every period over by the stored
// time), the discarded dead letters that arrived then go, in a batch of
// rows; one that arrived a moment ago (a DLQ stream restored from an old
// backup) stays, and keeps the day from being emptied whole. A
// quarantined one stored 100 days ago that arrived 95 days ago is past its
// 90 days both ways and goes; one that arrived 60 days ago stays.
func TestRetentionJudgesByTheLaterOfStoredAndArrived(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	st := dlq.NewStore(r.db.Pool)
	store := func(seq uint64, at, arrived time.Time, status dlq.Status) int64 {
		t.Helper()
		rec := dlqMessage("ARRIVED", seq, "orders.refund", "refund-arrived", at)
		_, err := st.Insert(ctx, []dlq.Record{rec})
		require.NoError(t, err)
		d, err := st.BySource(ctx, "ARRIVED", seq, "")
		require.NoError(t, err)
		if !arrived.IsZero() {
			_, err = r.db.Pool.Exec(ctx, `UPDATE dead_letters SET received_at = $2 WHERE id = $1`, d.ID, arrived)
			require.NoError(t, err)
		}
		if status != dlq.StatusQuarantined {
			testfactory.SetStatus(t, r.db.Pool, status, d.ID)
		}
		return d.ID
	}
	old := r.daysAgo(120)
	thenA := store(1, old, old, dlq.StatusDiscarded)
	thenB := store(2, old.Add(time.Minute), old.Add(time.Minute), dlq.StatusDiscarded)
	late := store(3, old.Add(2*time.Minute), time.Time{}, dlq.StatusDiscarded) // arrived now
	past := store(4, r.daysAgo(100), r.daysAgo(95), dlq.StatusQuarantined)
	within := store(5, r.daysAgo(100).Add(time.Minute), r.daysAgo(60), dlq.StatusQuarantined)
	_, err := dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)

	pass := r.pass(t)
	for _, run := range pass.Runs {
		assert.Empty(t, run.Partition, "no day is emptied whole while a dead letter of it arrived within its period")
	}
	assert.Equal(t, int64(3), pass.Removed())
	all := []int64{thenA, thenB, late, past, within}
	assert.Equal(t, []int64{late, within}, r.remaining(t, all), "what arrived within its period stays, whatever its stored time")
	assert.Contains(t, partitionNames(t, r.db), dlq.PartitionName(old), "the late one's day is kept")
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	assert.Empty(t, testfactory.CountersDrift(t, r.db.Pool))
	r.verify(t)

	// A second pass removes nothing more: nothing else is due.
	assert.Zero(t, r.pass(t).Removed())
}
