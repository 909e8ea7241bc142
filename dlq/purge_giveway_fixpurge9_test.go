package dlq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixPurge9GiveWayAtEmptyUndoesTheRun: a day's purge that counted the
// day, subtracted it from the counters and kept its source keys, and then
// does not get the TRUNCATE's lock (a report still reads the day) gives
// way with 55P03 after at most about 300 ms, without queueing for the
// lock, and the whole run is rolled back: the rows, the counters, the kept
// keys and the audit log are as before. Once the reader is gone the same
// day is emptied whole.
func TestFixPurge9GiveWayAtEmptyUndoesTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, st, day := pastDayOfThree(t)

	// state is what a rolled-back run must leave as it was.
	state := func() string {
		var rows, purged, audited int64
		var counts, groups string
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM dead_letters),
            (SELECT count(*) FROM dead_letters_purged), (SELECT count(*) FROM audit_log),
            (SELECT coalesce(string_agg(c::text, ',' ORDER BY c::text), '') FROM dead_letter_counts c),
            (SELECT coalesce(string_agg(g::text, ',' ORDER BY g::text), '') FROM dead_letter_groups g)`).
			Scan(&rows, &purged, &audited, &counts, &groups))
		return fmt.Sprintf("rows %d, kept keys %d, audit rows %d, counts [%s], groups [%s]", rows, purged, audited, counts, groups)
	}
	before := state()

	reader := readDay(t, db, day)

	conn, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	p := Partition{Name: PartitionName(day), Day: day}
	start := time.Now()
	_, emptied, err := st.purgeDay(ctx, conn, p, keepAll3dRevIngest9{}, nil, time.Now())
	took := time.Since(start)
	require.Error(t, err)
	assert.True(t, gaveWay(err), "the run gives way (55P03), not fails: %v", err)
	assert.Equal(t, "55P03", sqlStateOf(err))
	assert.ErrorContains(t, err, "stayed in use", "it gave way at the TRUNCATE's lock, after counting")
	assert.False(t, emptied)
	assert.Less(t, took, 2*time.Second, "it does not wait for the reader beyond its few hundred milliseconds")
	assert.Equal(t, before, state(), "nothing of the rolled-back run stays")

	// The reader read on meanwhile, and still does.
	var n int
	require.NoError(t, reader.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&n))
	require.NoError(t, reader.Rollback(ctx))

	run, emptied, err := st.purgeDay(ctx, conn, p, keepAll3dRevIngest9{}, nil, time.Now())
	require.NoError(t, err)
	assert.True(t, emptied, "with the reader gone the day is emptied whole")
	assert.EqualValues(t, 3, run.Rows)
}
