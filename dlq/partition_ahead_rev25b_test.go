package dlq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRevPartition25KeeperMakesYesterdayTodayAndAWeekAhead: a keeper
// pass with the console's defaults makes the partitions of yesterday,
// today and the seven days after (KeeperConfig.Ahead 7, makeAhead). The
// migration that made dead_letters partitioned makes those same days when
// it runs, so a fresh test database already has them and a keeper that
// made none (or fewer) could not be told apart: they are dropped first
// (empty, by the schema's owner), and the pass must make each again.
func TestRevPartition25KeeperMakesYesterdayTodayAndAWeekAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	var now time.Time
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT now()`).Scan(&now), "the keeper goes by the database's clock")
	today := dlq.Day(now)
	var want []string
	for i := -1; i <= 7; i++ {
		want = append(want, dlq.PartitionName(today.AddDate(0, 0, i)))
	}
	for _, name := range want {
		_, err := db.OwnerPool.Exec(ctx, fmt.Sprintf(`DROP TABLE IF EXISTS %s`, name))
		require.NoError(t, err)
	}
	have := partitionNames(t, db)
	for _, name := range want {
		require.NotContains(t, have, name, "dropped before the pass")
	}

	pass, err := dlq.NewKeeper(dlq.NewStore(db.Pool), dlq.KeeperConfig{}, nil, quiet).Pass(ctx)
	require.NoError(t, err)
	require.False(t, pass.Skipped)
	have = partitionNames(t, db)
	for _, name := range want {
		assert.Contains(t, have, name, "made by the pass: yesterday, today and seven days ahead")
	}
	assert.Equal(t, len(want), pass.Made, "the pass made each of the %d days", len(want))
}
