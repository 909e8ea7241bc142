package dlq_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevRetention31DayPastTheTimeoutGoesInBatches: emptying a past day
// whole counts and keeps all of it in a few statements; a day too large
// for the workers' statement timeout (here: one whose lock the day's run
// waits for past it) failed the run with 57014, which was no give-way:
// the pass stopped there, every pass, and nothing after it ran (the batch
// deletes, dropping empty days, trimming). The day now gives way as a busy
// one does: its dead letters go in batches, and the pass goes on.
func TestRevRetention31DayPastTheTimeoutGoesInBatches(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	old := r.letters(t, 5, "acme", "orders.refund", r.daysAgo(100), dlq.StatusDiscarded)
	closed50 := r.letters(t, 4, "acme", "orders.refund", r.daysAgo(50), dlq.StatusDiscarded)

	keeper := r.keeperWithin300ms(t)

	// A writer of the old day that stays: the day's run waits for its
	// lock past the statement timeout.
	lock, err := r.db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Rollback(context.Background()) })
	_, err = lock.Exec(ctx, `LOCK TABLE `+dlq.PartitionName(r.daysAgo(100))+` IN ROW EXCLUSIVE MODE`)
	require.NoError(t, err)

	pass, err := keeper.Pass(ctx)
	require.NoError(t, err, "the day gave way; the pass went on")
	require.False(t, pass.Skipped)
	assert.Empty(t, r.remaining(t, slices.Concat(old, closed50)), "the old day's dead letters went in batches, and the others due")
	for _, run := range pass.Runs {
		assert.Empty(t, run.Partition, "no day was emptied whole")
	}
}

// keeperWithin300ms is a keeper on r's database whose statements may run
// 300 ms (the workers' statement timeout, made short).
func (r *retention) keeperWithin300ms(t *testing.T) *dlq.Keeper {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(r.db.URL)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "300"
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	table, err := replaypolicy.Parse("retention.toml", []byte(retentionPolicy))
	require.NoError(t, err)
	policy := app.RetentionOf(table.Retention())
	return dlq.NewKeeper(dlq.NewStore(pool), dlq.KeeperConfig{
		Policy: func() dlq.RetentionPolicy { return policy },
		Checkpoint: func(ctx context.Context, tx pgx.Tx, reason string) error {
			_, err := audit.Record(ctx, tx, r.signer, reason)
			return err
		},
	}, nil, quiet)
}

// TestRevRetention31BatchPastTheTimeoutIsLeftForLater: a batch run of
// retention that outlasts the statement timeout (here: its day held by a
// writer that keeps the table) stopped the pass with 57014, every pass.
// Its part is left for a later pass (KeeperPass.Behind), the pass goes on
// and completes; once the day is free the next pass removes what is due.
func TestRevRetention31BatchPastTheTimeoutIsLeftForLater(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	closed50 := r.letters(t, 4, "acme", "orders.refund", r.daysAgo(50), dlq.StatusDiscarded)
	keeper := r.keeperWithin300ms(t)

	lock, err := r.db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Rollback(context.Background()) })
	_, err = lock.Exec(ctx, `LOCK TABLE `+dlq.PartitionName(r.daysAgo(50))+` IN EXCLUSIVE MODE`)
	require.NoError(t, err)
	pass, err := keeper.Pass(ctx)
	require.NoError(t, err, "the pass goes on past the part")
	assert.Equal(t, 1, pass.Behind, "the part is left for a later pass")
	assert.Equal(t, closed50, r.remaining(t, closed50))

	require.NoError(t, lock.Rollback(ctx))
	pass, err = keeper.Pass(ctx)
	require.NoError(t, err)
	assert.Zero(t, pass.Behind)
	assert.Empty(t, r.remaining(t, closed50), "removed once the day is free")
}
