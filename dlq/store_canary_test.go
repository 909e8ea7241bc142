package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestStoreCanary: the canary (Store.Canary) stores a dead letter of its
// own the way a batch is stored and rolls it back: on a database that
// takes dead letters it answers nil and leaves nothing (no row, no counter
// row, no delta, no announcement); with dead_letters locked by someone
// else it fails as every insert does (Busy: the statement timeout), which
// a plain ping would not.
func TestStoreCanary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	st := NewStore(db.Pool)
	require.NoError(t, st.EnsurePartitions(ctx, []time.Time{time.Now()}))

	t.Run("KeepsNothing", func(t *testing.T) {
		listener, err := db.Pool.Acquire(ctx)
		require.NoError(t, err)
		defer listener.Release()
		_, err = listener.Exec(ctx, "LISTEN "+CountersChannel)
		require.NoError(t, err)
		defer func() { _, _ = listener.Exec(context.Background(), "UNLISTEN *") }()

		require.NoError(t, st.Canary(ctx))
		require.NoError(t, st.Canary(ctx), "twice: its source key is drawn anew")
		for table, want := range map[string]int{"dead_letters": 0, "dead_letter_counts": 0, "dead_letter_deltas": 0} {
			var n int
			require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n))
			assert.Equal(t, want, n, table)
		}
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err = listener.Conn().WaitForNotification(wctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded, "nothing announced")
	})

	t.Run("BusyWhenTheTableIsLocked", func(t *testing.T) {
		cfg := db.Pool.Config().Copy()
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = "200ms"
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		require.NoError(t, err)
		defer pool.Close()
		lock, err := db.OwnerPool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = lock.Rollback(context.Background()) }()
		_, err = lock.Exec(ctx, `LOCK TABLE dead_letters IN ACCESS EXCLUSIVE MODE`)
		require.NoError(t, err)

		_, err = pool.Exec(ctx, `SELECT 1`)
		require.NoError(t, err, "a ping answers")
		err = NewStore(pool).Canary(ctx)
		require.Error(t, err)
		assert.True(t, Busy(err), "%v", err)
	})
}
