package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestArrivalsTrimmedPastWhatIsRead checks the keeper's trim of the arrival
// counters: minutes older than MinuteArrivalsKept, hours (by type and class,
// and by tenant) older than HourArrivalsKept go; what the dashboard still
// reads stays, and a trimmed hour takes nothing from the tenant hours.
func TestArrivalsTrimmedPastWhatIsRead(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Hour)
	oldMinute, keptMinute := now.Add(-MinuteArrivalsKept-time.Minute), now.Add(-MinuteArrivalsKept+time.Minute)
	oldHour, keptHour := now.Add(-HourArrivalsKept-time.Hour), now.Add(-HourArrivalsKept+time.Hour)
	_, err := l.db.Pool.Exec(ctx, `INSERT INTO dead_letter_arrivals_minute (tenant, minute, n) VALUES ('acme', $1, 1), ('acme', $2, 2)`, oldMinute, keptMinute)
	require.NoError(t, err)
	_, err = l.db.Pool.Exec(ctx, `INSERT INTO dead_letter_arrivals (tenant, hour, item_type, error_class, n) VALUES
        ('acme', $1, 'email.send', 'permanent', 3), ('acme', $2, 'email.send', 'permanent', 4)`, oldHour, keptHour)
	require.NoError(t, err)

	n, err := trimArrivals(ctx, l.db.Pool, now, 10_000, 100)
	require.NoError(t, err)
	assert.Equal(t, int64(3), n, "one old minute, one old hour, one old tenant hour")

	count := func(sql string, args ...any) (c int64) {
		t.Helper()
		require.NoError(t, l.db.Pool.QueryRow(ctx, sql, args...).Scan(&c))
		return c
	}
	assert.Equal(t, int64(2), count(`SELECT coalesce(sum(n), 0) FROM dead_letter_arrivals_minute`), "the minute still read stays")
	assert.Equal(t, int64(4), count(`SELECT coalesce(sum(n), 0) FROM dead_letter_arrivals`), "the hour still read stays")
	assert.Equal(t, int64(4), count(`SELECT coalesce(sum(n), 0) FROM dead_letter_arrivals_tenant_hour`), "the tenant hour still read stays, with all of its count")
	assert.Zero(t, count(`SELECT count(*) FROM dead_letter_arrivals_tenant_hour WHERE hour < $1`, now.Add(-HourArrivalsKept)))

	n, err = trimArrivals(ctx, l.db.Pool, now, 10_000, 100)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing more to trim")
}

// TestArrivalsTrimmedInBatchesUntilDone: a table holding more old rows than
// one batch is trimmed batch after batch in one call, up to maxRuns
// statements a table; what is left goes at the next call. Before, one
// statement of 10,000 rows a table a pass let arrivals that make more rows
// than that in a keeper's interval pile up for good (review 23d).
func TestArrivalsTrimmedInBatchesUntilDone(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Hour)
	old := now.Add(-MinuteArrivalsKept - time.Hour)
	_, err := l.db.Pool.Exec(ctx, `INSERT INTO dead_letter_arrivals_minute (tenant, minute, n)
        SELECT 't' || i, $1, 1 FROM generate_series(1, 25) i`, old)
	require.NoError(t, err)
	left := func() (c int64) {
		t.Helper()
		require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letter_arrivals_minute`).Scan(&c))
		return c
	}

	n, err := trimArrivals(ctx, l.db.Pool, now, 10, 2)
	require.NoError(t, err)
	assert.Equal(t, int64(20), n, "two full batches of 10, the most two statements a table remove")
	assert.Equal(t, int64(5), left())

	n, err = trimArrivals(ctx, l.db.Pool, now, 10, 2)
	require.NoError(t, err)
	assert.Equal(t, int64(5), n, "the rest at the next call")
	assert.Zero(t, left())

	_, err = l.db.Pool.Exec(ctx, `INSERT INTO dead_letter_arrivals_minute (tenant, minute, n)
        SELECT 't' || i, $1, 1 FROM generate_series(1, 25) i`, old)
	require.NoError(t, err)
	n, err = trimArrivals(ctx, l.db.Pool, now, 10, 100)
	require.NoError(t, err)
	assert.Equal(t, int64(25), n, "batch after batch in one call until one is not full")
	assert.Zero(t, left())
}
