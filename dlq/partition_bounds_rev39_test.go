package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// rev39Terms keep every dead letter 30 days.
const rev39Terms = `
[[rule]]
item_type = "search.*"
class = "rebuildable"

[retention]
closed = "30d"
unresolved = "30d"
`

// oddSessions is a pool on r's database whose sessions print timestamps
// with a zone abbreviation PostgreSQL reads back as another zone's
// ("IST": India's, read as Israel's).
func oddSessions(t *testing.T, r *retention) *pgxpool.Pool {
	t.Helper()
	cfg := r.db.Pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["datestyle"], cfg.ConnConfig.RuntimeParams["timezone"] = "SQL, DMY", "Asia/Kolkata"
	odd, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(odd.Close)
	return odd
}

// TestRev39PartitionMadeUnderAnySessionHoldsItsDay: a day's partition made
// over a session whose DateStyle and TimeZone print midnight UTC as text
// that reads back as another time still holds exactly its UTC day. Before,
// it held [D 03:30, D+1 03:30): retention emptied the table whole and took
// a dead letter of the next day's first hours, named by an open draft,
// with it; and the hours between such a day and one made over an ordinary
// session had no partition, so their dead letters were never stored.
func TestRev39PartitionMadeUnderAnySessionHoldsItsDay(t *testing.T) {
	t.Parallel()
	r := setupRetentionWith(t, rev39Terms)
	ctx := context.Background()
	odd := oddSessions(t, r)
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}

	old, next := dlq.Day(r.daysAgo(121)), dlq.Day(r.daysAgo(120))
	require.NoError(t, dlq.NewStore(odd).EnsurePartitions(ctx, []time.Time{old, next}))
	var lo, hi time.Time
	require.NoError(t, r.db.Pool.QueryRow(ctx, `
        SELECT (regexp_match(b, 'FROM \(''([^'']+)''\)'))[1]::timestamptz, (regexp_match(b, 'TO \(''([^'']+)''\)'))[1]::timestamptz
        FROM (SELECT pg_get_expr(relpartbound, oid) AS b FROM pg_class WHERE relname = $1) x`,
		"dead_letters_p"+old.Format("20060102")).Scan(&lo, &hi))
	assert.Equal(t, old, lo.UTC(), "from midnight UTC of its day")
	assert.Equal(t, next, hi.UTC(), "to midnight UTC of the next")

	drafted := r.letters(t, 1, "acme", "search.index_update", next.Add(time.Hour), dlq.StatusQuarantined)
	closed := r.letters(t, 1, "acme", "search.index_update", old.Add(12*time.Hour), dlq.StatusResolved)
	testfactory.Draft(t, r.replays, oncall, drafted...)
	r.pass(t)
	assert.Empty(t, r.remaining(t, closed), "the closed dead letter's day went")
	assert.Equal(t, drafted, r.remaining(t, drafted), "a dead letter an open draft names stays")

	// A day made over an ordinary session next to one made over an odd
	// one: no hour between them lacks a partition.
	later := dlq.Day(r.daysAgo(-20))
	require.NoError(t, dlq.NewStore(r.db.Pool).EnsurePartitions(ctx, []time.Time{later.AddDate(0, 0, -1)}))
	require.NoError(t, dlq.NewStore(odd).EnsurePartitions(ctx, []time.Time{later}))
	stored := testfactory.DeadLetters(t, r.db.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", At: later.Add(time.Hour)},
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", At: later.Add(-time.Hour)})
	assert.Len(t, r.remaining(t, stored), 2)
}

// TestRev39DayNotHeldByItsPartitionIsNotEmptiedWhole: a day partition
// whose bounds are not its name's day (made before migration 0074 over
// such a session, or attached by hand) is not emptied whole: what
// retention counts is the name's day, and the table holds other hours.
// The pass fails naming it, and its dead letters go as rows, each under
// its own terms: the one an open draft names stays.
func TestRev39DayNotHeldByItsPartitionIsNotEmptiedWhole(t *testing.T) {
	t.Parallel()
	r := setupRetentionWith(t, rev39Terms)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}

	day := dlq.Day(r.daysAgo(121))
	name := "dead_letters_p" + day.Format("20060102")
	_, err := r.db.OwnerPool.Exec(ctx, `CREATE TABLE `+name+` (LIKE dead_letters INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`)
	require.NoError(t, err)
	_, err = r.db.OwnerPool.Exec(ctx, `ALTER TABLE dead_letters ATTACH PARTITION `+name+` FOR VALUES FROM ($$`+
		day.Add(210*time.Minute).Format(time.RFC3339)+`$$) TO ($$`+day.Add(24*time.Hour+210*time.Minute).Format(time.RFC3339)+`$$)`)
	require.NoError(t, err)
	// The hours before it are the day before's, in an ordinary partition.
	require.NoError(t, dlq.NewStore(r.db.Pool).EnsurePartitions(ctx, []time.Time{day.AddDate(0, 0, -1)}))

	drafted := r.letters(t, 1, "acme", "search.index_update", day.Add(24*time.Hour+time.Hour), dlq.StatusQuarantined)
	closed := r.letters(t, 1, "acme", "search.index_update", day.Add(12*time.Hour), dlq.StatusResolved)
	testfactory.Draft(t, r.replays, oncall, drafted...)

	pass, err := r.keeper.Pass(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), name)
	assert.Contains(t, err.Error(), "does not hold exactly its day")
	require.False(t, pass.Skipped)
	assert.Empty(t, r.remaining(t, closed), "the closed dead letter went as a row")
	assert.Equal(t, drafted, r.remaining(t, drafted), "a dead letter an open draft names stays")
}
