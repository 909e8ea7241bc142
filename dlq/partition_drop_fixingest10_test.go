package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestFixIngest10EmptyDayDropGivesWayToAReader: while a transaction reads
// dead_letters (any day), the keeper's drop of an empty past day does not
// get the table's lock within its 300 ms and gives way: the pass ends
// without an error, the day stays, and nothing queued behind the drop.
// Once the reader ends, the next pass drops the day.
func TestFixIngest10EmptyDayDropGivesWayToAReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	st := NewStore(db.Pool)
	old := Day(time.Now()).AddDate(0, 0, -10)
	require.NoError(t, st.EnsurePartitions(ctx, []time.Time{old}))
	exists := func() bool {
		var ok bool
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, PartitionName(old)).Scan(&ok))
		return ok
	}
	require.True(t, exists())

	reader, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = reader.Rollback(context.Background()) })
	var n int
	require.NoError(t, reader.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE dead_lettered_at >= $1`, Day(time.Now())).Scan(&n))

	k := NewKeeper(st, KeeperConfig{}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	start := time.Now()
	p, err := k.Pass(ctx)
	require.NoError(t, err, "giving way is no failure of the pass")
	assert.Zero(t, p.Dropped)
	assert.True(t, exists(), "the day is left for a later pass")
	assert.Less(t, time.Since(start), 2*time.Second, "it asked for at most 300 ms, it did not wait out a lock_timeout")

	require.NoError(t, reader.Rollback(ctx))
	p, err = k.Pass(ctx)
	require.NoError(t, err)
	assert.Positive(t, p.Dropped)
	assert.False(t, exists(), "dropped once the table is free")
}
