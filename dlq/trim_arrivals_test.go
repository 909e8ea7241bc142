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

	n, err := trimArrivals(ctx, l.db.Pool, now)
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

	n, err = trimArrivals(ctx, l.db.Pool, now)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing more to trim")
}
