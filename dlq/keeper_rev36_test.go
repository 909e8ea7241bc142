package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestRev36MisnamedPartitionStopsNothing: a partition of dead_letters
// attached by hand under a name that is no day (dead_letters_p20240231)
// stops neither the keeper's pass nor the lists of partitions (the
// counters and the sweep read them too): it is no day partition of the
// console's, and the pass removes what retention says as before.
func TestRev36MisnamedPartitionStopsNothing(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	old := r.letters(t, 3, "acme", "search.index_update", r.daysAgo(40), dlq.StatusResolved)
	_, err := r.db.OwnerPool.Exec(ctx, `CREATE TABLE dead_letters_p20240231 PARTITION OF dead_letters
        FOR VALUES FROM ('2001-01-01 00:00:00+00') TO ('2001-01-02 00:00:00+00')`)
	require.NoError(t, err)

	// Read over connections whose DateStyle and TimeZone print a
	// timestamp with a zone's abbreviation that reads back as another
	// zone's: the days are midnight UTC all the same.
	cfg := r.db.Pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["datestyle"], cfg.ConnConfig.RuntimeParams["timezone"] = "SQL, DMY", "Asia/Kolkata"
	odd, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer odd.Close()
	parts, err := dlq.NewStore(odd).Partitions(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, parts)
	for _, p := range parts {
		assert.NotEqual(t, "dead_letters_p20240231", p.Name)
		assert.Equal(t, "dead_letters_p"+p.Day.Format("20060102"), p.Name)
		assert.Equal(t, dlq.Day(p.Day), p.Day, "%s: midnight UTC", p.Name)
	}
	r.pass(t)
	assert.Empty(t, r.remaining(t, old), "retention went on")
}

// TestRev36EmptyDayThatWillNotDropStopsNoOtherStep: an empty past day
// that cannot be dropped (a view depends on it) fails the pass, naming
// it, but neither the empty days after it are kept from being dropped nor
// the arrival counters from being trimmed.
func TestRev36EmptyDayThatWillNotDropStopsNoOtherStep(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	stuck, next := dlq.Day(r.daysAgo(11)), dlq.Day(r.daysAgo(10))
	_, err := r.db.OwnerPool.Exec(ctx, `SELECT quarantine_dead_letter_partitions($1)`, []time.Time{stuck, next})
	require.NoError(t, err)
	stuckName := "dead_letters_p" + stuck.Format("20060102")
	_, err = r.db.OwnerPool.Exec(ctx, `CREATE VIEW rev36_report AS SELECT id FROM `+stuckName)
	require.NoError(t, err)
	_, err = r.db.OwnerPool.Exec(ctx, `INSERT INTO dead_letter_arrivals_minute (tenant, minute, n) VALUES ('acme', $1, 1)`, r.daysAgo(30))
	require.NoError(t, err)

	pass, err := r.keeper.Pass(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), stuckName)
	assert.Equal(t, 1, pass.Dropped, "the next empty day was dropped")
	assert.Positive(t, pass.Trimmed, "the arrival counters were trimmed")
	var left []string
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT coalesce(array_agg(relname ORDER BY relname), '{}') FROM pg_class WHERE relname = ANY($1)`,
		[]string{stuckName, "dead_letters_p" + next.Format("20060102")}).Scan(&left))
	assert.Equal(t, []string{stuckName}, left)
}
