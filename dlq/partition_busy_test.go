package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestSweepPartitionLockTimeoutHoldsNothing: the sweep finds a dead
// letter acked without a row, for a day without a partition that cannot
// be made within the statement timeout (an ANALYZE holds dead_letters in
// SHARE UPDATE EXCLUSIVE: the ATTACH waits, 57014). That is PostgreSQL
// busy, not the dead letter refused: each sweep stops there with the
// error, holds nothing and counts nothing against it, however many sweeps
// go by (before, each counted, and the 5th stored its position form once
// the lock was gone: payload lost). Once the lock ends the next sweep
// stores it whole.
func TestSweepPartitionLockTimeoutHoldsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(b.db.URL)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "300"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b.store = NewStore(pool)
	in, _ := b.idle(t, IngestConfig{})
	publishAcked(t, b, 1, map[int]string{1: `{"order":"precious"}`})

	_, err = b.db.OwnerPool.Exec(ctx, `DROP TABLE IF EXISTS `+PartitionName(time.Now()))
	require.NoError(t, err)
	lock, err := b.db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Rollback(context.Background()) })
	_, err = lock.Exec(ctx, `LOCK TABLE ONLY dead_letters IN SHARE UPDATE EXCLUSIVE MODE`)
	require.NoError(t, err)

	for i := range 2 * sweepHeldTries {
		_, err := in.sweep(ctx, "DLQ")
		require.Error(t, err, "sweep %d: PostgreSQL busy stops the step", i+1)
		assert.True(t, Busy(err), "sweep %d: %v", i+1, err)
	}
	assert.Zero(t, countRows(t, b.db.Pool, "true"))
	var held int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT coalesce(sum(cardinality(held)), 0) FROM ingest_sweep_watermark WHERE stream = 'DLQ'`).Scan(&held))
	assert.Zero(t, held, "nothing held: the dead letter did nothing")
	assert.Empty(t, in.sweeping.failed, "no sweep counted against it")

	require.NoError(t, lock.Commit(ctx))
	// Making the partition may still outlast the 300 ms statement timeout
	// on a loaded machine (CI20): busy again, nothing held, and a later
	// sweep stores it. Anything but busy fails the test.
	var res sweepResult
	wait.For(t, "a sweep to store the dead letter once the lock is gone", time.Minute, func() error {
		r, err := in.sweep(ctx, "DLQ")
		if err != nil && !Busy(err) {
			t.Fatalf("the sweep after the lock: %v", err)
		}
		res = r
		return err
	})
	assert.Equal(t, uint64(1), res.Stored)
	d := b.row(t, "source_seq = 1")
	assert.NotContains(t, d.Flags, "content_refused")
	assert.NotContains(t, d.Flags, "raw_form")
	assert.Equal(t, []byte(`{"order":"precious"}`), d.Payload, "stored whole")
}
