package dlq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDashboardRollingDayFromWholeHours checks the dashboard's last hour,
// rolling day and charts, which sum whole hours per tenant and minutes only
// for the partial hours at the ends of the day, against the dead letters
// themselves, for clocks at every kind of place in an hour (its first
// minute, its middle, its last minute, the second before the next hour).
func TestDashboardRollingDayFromWholeHours(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	// Every 7 minutes and 13 seconds over 27 hours before base (and an
	// hour after it: dead letters in the current minute or later than the
	// clock), two tenants, so every hour and both ends of every possible
	// rolling day hold some, at and off minute boundaries.
	base := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	var xs []letter
	for at := base.Add(-27 * time.Hour); at.Before(base.Add(time.Hour)); at = at.Add(7*time.Minute + 13*time.Second) {
		xs = append(xs, letter{tenant: []string{"acme", "globex"}[len(xs)%2], at: at, err: "boom"})
	}
	// Exactly on the minute a rolling day starts at, and the minute before.
	for _, at := range []time.Time{base.Add(-1439 * time.Minute), base.Add(-1440 * time.Minute), base.Add(-1381 * time.Minute), base.Add(-1380 * time.Minute)} {
		xs = append(xs, letter{tenant: "acme", at: at, err: "edge"})
	}
	l.insert(t, xs...)

	tenants := []string{"acme", "globex"}
	for _, offset := range []time.Duration{0, 30 * time.Second, time.Minute, 21 * time.Minute, 58 * time.Minute, 59 * time.Minute, time.Hour - time.Second} {
		now := base.Add(offset)
		minute := now.Truncate(time.Minute)
		for _, span := range []time.Duration{24 * time.Hour, time.Hour, 7 * 24 * time.Hour} {
			t.Run(fmt.Sprintf("%s/%s", offset, span), func(t *testing.T) {
				d, err := l.store.Dashboard(ctx, DashboardQuery{Tenants: tenants, Now: now, Span: span})
				require.NoError(t, err)
				hour := now.Truncate(time.Hour)
				since := hour.Add(-span + time.Hour)
				wantHour, wantDay := map[string]int64{}, map[string]int64{}
				wantChart := map[time.Time]int64{}
				for _, x := range xs {
					m := x.at.Truncate(time.Minute)
					if m.After(now) {
						continue // stored later than the clock: not yet arrived
					}
					if !m.Before(minute.Add(-59 * time.Minute)) {
						wantHour[x.tenant]++
					}
					if !m.Before(minute.Add(-1439 * time.Minute)) {
						wantDay[x.tenant]++
					}
					if h := x.at.Truncate(time.Hour); !h.Before(since) {
						wantChart[h]++
					}
				}
				require.Len(t, d.Tenants, 2)
				for _, ts := range d.Tenants {
					assert.Equal(t, wantHour[ts.Tenant], ts.LastHour, "%s: last hour", ts.Tenant)
					assert.Equal(t, wantDay[ts.Tenant], ts.LastDay, "%s: last day", ts.Tenant)
				}
				require.Len(t, d.Arrivals, int(span/time.Hour))
				for _, b := range d.Arrivals {
					assert.Equal(t, wantChart[b.Start], b.N, "chart hour %s", b.Start)
				}
				assert.Equal(t, hour, d.Arrivals[len(d.Arrivals)-1].Start, "the current hour last")
			})
		}
	}
}

// TestTenantHoursFollowEveryWriteOfTheHours checks that the arrivals per
// tenant and hour follow dead_letter_arrivals whoever writes it: a fold of
// this console, or another statement (a console of an older version folds
// without knowing the table), inserting, adding to a row, or moving one.
func TestTenantHoursFollowEveryWriteOfTheHours(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	hour := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	l.insert(t, letter{tenant: "acme", at: hour.Add(time.Minute)}, letter{tenant: "acme", itemType: "email.send", at: hour.Add(2 * time.Minute)})

	upsert := `INSERT INTO dead_letter_arrivals AS a (tenant, hour, item_type, error_class, n) VALUES ($1, $2, $3, 'permanent', $4)
        ON CONFLICT (tenant, hour, item_type, error_class) DO UPDATE SET n = a.n + excluded.n`
	for _, w := range []struct {
		tenant, itemType string
		n                int64
	}{{"acme", "orders.refund", 5}, {"acme", "search.index_update", 7}, {"globex", "orders.refund", 11}} {
		_, err := l.db.Pool.Exec(ctx, upsert, w.tenant, hour, w.itemType, w.n)
		require.NoError(t, err)
	}
	_, err := l.db.Pool.Exec(ctx, `UPDATE dead_letter_arrivals SET tenant = 'initech', n = n + 1 WHERE tenant = 'globex'`)
	require.NoError(t, err)

	got := map[string]int64{}
	rows, err := l.db.Pool.Query(ctx, `SELECT tenant, n FROM dead_letter_arrivals_tenant_hour WHERE hour = $1`, hour)
	require.NoError(t, err)
	for rows.Next() {
		var tenant string
		var n int64
		require.NoError(t, rows.Scan(&tenant, &n))
		got[tenant] = n
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, map[string]int64{"acme": 2 + 5 + 7, "globex": 0, "initech": 12}, got)

	var diff int
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*) FROM (
        (SELECT tenant, hour, sum(n) FROM dead_letter_arrivals GROUP BY 1, 2 EXCEPT SELECT tenant, hour, n FROM dead_letter_arrivals_tenant_hour WHERE n <> 0)
        UNION ALL
        (SELECT tenant, hour, n FROM dead_letter_arrivals_tenant_hour WHERE n <> 0 EXCEPT SELECT tenant, hour, sum(n) FROM dead_letter_arrivals GROUP BY 1, 2)) d`).Scan(&diff))
	assert.Zero(t, diff, "the tenant hours are the hours summed over types and classes")
}
