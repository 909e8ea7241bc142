package dlq_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// partitionNames lists the partitions of dead_letters.
func partitionNames(t *testing.T, db *testdb.DB) []string {
	t.Helper()
	ps, err := dlq.NewStore(db.Pool).Partitions(context.Background())
	require.NoError(t, err)
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// sqlState is the SQLSTATE of err ("" when it has none).
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// TestPartitionsCreatedAhead checks that the console makes a partition of
// dead_letters for yesterday, today and the days ahead when it starts, that
// a keeper pass is idempotent and waits its turn behind another console's
// (the advisory lock), that a dead letter of a day without a partition gets
// one on demand, and that the runtime role makes partitions only through
// the owner's function, which refuses days out of range.
func TestPartitionsCreatedAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	today := dlq.Day(time.Now())
	var want []string
	for i := -1; i <= 7; i++ {
		want = append(want, dlq.PartitionName(today.AddDate(0, 0, i)))
	}
	wait.Until(t, "the console's keeper made today's and the next seven days' partitions", time.Minute, func() bool {
		have := partitionNames(t, c.DB)
		for _, w := range want {
			if !slices.Contains(have, w) {
				return false
			}
		}
		return true
	})

	k := dlq.NewKeeper(dlq.NewStore(c.DB.Pool), dlq.KeeperConfig{Ahead: 10}, nil, quiet)
	var pass dlq.KeeperPass
	notSkipped := func(what string) {
		wait.For(t, what, time.Minute, func() error {
			var err error
			if pass, err = k.Pass(ctx); err != nil || pass.Skipped {
				return errors.Join(wait.ErrNotYet, err)
			}
			return nil
		})
	}
	// A midnight since a day was taken is one day ahead more for a pass
	// to make (or for the console's own keeper to make first): the test
	// may run at any time of day.
	midnights := func(since time.Time) int { return int(dlq.Day(time.Now()).Sub(since).Hours() / 24) }
	notSkipped("a keeper pass not skipped (the console's own may be under way)")
	assert.True(t, pass.Made >= 3 && pass.Made <= 3+midnights(today), "three more days ahead: %d made", pass.Made)
	second := dlq.Day(time.Now())
	notSkipped("a second pass not skipped")
	assert.LessOrEqual(t, pass.Made, midnights(second), "a second pass makes nothing")
	assert.Contains(t, partitionNames(t, c.DB), dlq.PartitionName(today.AddDate(0, 0, 10)))

	// Another console's pass under way: this one skips its turn.
	other, err := c.DB.Pool.Acquire(ctx)
	require.NoError(t, err)
	_, err = other.Exec(ctx, `SELECT pg_advisory_lock($1)`, dlq.KeeperLockKey)
	require.NoError(t, err)
	pass, err = dlq.NewKeeper(dlq.NewStore(c.DB.Pool), dlq.KeeperConfig{Ahead: 20}, nil, quiet).Pass(ctx)
	require.NoError(t, err)
	assert.True(t, pass.Skipped)
	assert.NotContains(t, partitionNames(t, c.DB), dlq.PartitionName(today.AddDate(0, 0, 20)))
	_, err = other.Exec(ctx, `SELECT pg_advisory_unlock($1)`, dlq.KeeperLockKey)
	require.NoError(t, err)
	other.Release()

	// A dead letter stored 40 days ago (a stream that kept it) makes its day.
	old := today.AddDate(0, 0, -40).Add(13 * time.Hour)
	id := testfactory.DeadLetter(t, c.DB.Pool, testfactory.Letter{At: old})
	assert.Contains(t, partitionNames(t, c.DB), dlq.PartitionName(old))
	var in string
	require.NoError(t, c.DB.Pool.QueryRow(ctx, `SELECT tableoid::regclass::text FROM dead_letters WHERE id = $1`, id).Scan(&in))
	assert.Equal(t, dlq.PartitionName(old), in)

	// The runtime role may not make tables; the function checks its days.
	_, err = c.DB.Pool.Exec(ctx, `CREATE TABLE dead_letters_p21000101 (LIKE dead_letters)`)
	assert.Equal(t, "42501", sqlState(err), "%v", err)
	for _, day := range []time.Time{time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), today.AddDate(0, 0, 401)} {
		_, err = c.DB.Pool.Exec(ctx, `SELECT quarantine_dead_letter_partitions($1)`, []time.Time{day})
		assert.Equal(t, "22023", sqlState(err), "%s: %v", day, err)
	}
	_, err = c.DB.Pool.Exec(ctx, `SELECT quarantine_dead_letter_partitions($1)`, make([]time.Time, 401))
	assert.Equal(t, "22023", sqlState(err), "at most 400 days a call: %v", err)
}

// TestKeysetAcrossPartitions pages, both ways, through dead letters spread
// over six days (one partition each; several share one instant, and some
// sit on either side of a midnight), with and without filters, and checks
// that every page is the next slice of the reference order: nothing lost or
// repeated at a partition's edge. A page behind a cursor is planned without
// the partitions past it.
func TestKeysetAcrossPartitions(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	midnight := dlq.Day(time.Now()).AddDate(0, 0, -2)
	var letters []testfactory.Letter
	for i := range 330 {
		at := midnight.AddDate(0, 0, -3).Add(time.Duration(i) * 22 * time.Minute).Truncate(time.Minute)
		switch {
		case i%50 == 0: // on the midnight itself, several at once
			at = midnight
		case i%50 == 1:
			at = midnight.Add(-time.Microsecond)
		}
		letters = append(letters, testfactory.Letter{
			Tenant: []string{"acme", "globex"}[i%2], ItemType: []string{"orders.refund", "email.send", "search.index_update"}[i%3],
			Class: []string{"transient", "permanent"}[i%2], At: at, MsgID: fmt.Sprint("m-", i),
			Error: fmt.Sprint("refund failed at gateway ", i%4),
		})
	}
	testfactory.DeadLetters(t, db.Pool, letters...)
	var days int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(DISTINCT tableoid) FROM dead_letters`).Scan(&days))
	require.GreaterOrEqual(t, days, 6, "the dead letters lie in six partitions or more")

	store := dlq.NewStore(db.Pool)
	store.SetTextWindowRows(10) // a text search reads many windows of these few rows
	reference := func(where string) []int64 {
		rows, err := db.Pool.Query(ctx, `SELECT id FROM dead_letters WHERE `+where+` ORDER BY dead_lettered_at DESC, id DESC`)
		require.NoError(t, err)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		return ids
	}
	both := []string{"acme", "globex"}
	for _, tc := range []struct {
		name  string
		f     dlq.ListFilter
		where string
	}{
		{"All", dlq.ListFilter{Tenants: both}, `true`},
		{"Tenant", dlq.ListFilter{Tenants: both, Tenant: "globex"}, `tenant = 'globex'`},
		{"TypeAndClass", dlq.ListFilter{Tenants: both, ItemType: "email.send", ErrorClass: dlq.ClassPermanent},
			`item_type = 'email.send' AND error_class = 'permanent'`},
		// A text search reads windows of time outward from the cursor: the
		// pages are the same as one query over everything.
		{"Text", dlq.ListFilter{Tenants: both, Text: "GATEWAY 1"}, `error ILIKE '%gateway 1%'`},
		{"TextAndType", dlq.ListFilter{Tenants: both, Text: "gateway", ItemType: "email.send"}, `error ILIKE '%gateway%' AND item_type = 'email.send'`},
		{"TimeRange", dlq.ListFilter{Tenants: both, From: midnight.Add(-12 * time.Hour), To: midnight.Add(12 * time.Hour)},
			fmt.Sprintf(`dead_lettered_at >= '%s' AND dead_lettered_at < '%s'`, midnight.Add(-12*time.Hour).Format(time.RFC3339Nano), midnight.Add(12*time.Hour).Format(time.RFC3339Nano))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := reference(tc.where)
			require.Greater(t, len(want), dlq.ListPageSize, "more than a page")
			var forward []int64
			var pages []dlq.ListPage
			f := tc.f
			for {
				p, err := store.ListDeadLetters(ctx, f)
				require.NoError(t, err)
				pages = append(pages, p)
				for _, it := range p.Items {
					forward = append(forward, it.ID)
				}
				if p.Next == "" {
					break
				}
				f.Before, f.After = p.Next, ""
			}
			assert.Equal(t, want, forward, "forward, page by page")
			last := pages[len(pages)-1]
			require.NotEmpty(t, last.Prev)
			var backward []int64
			f = tc.f
			f.Before, f.After = "", last.Prev
			for {
				p, err := store.ListDeadLetters(ctx, f)
				require.NoError(t, err)
				backward = append(slices.Clone(itemIDs(p)), backward...)
				if p.Prev == "" {
					break
				}
				f.Before, f.After = "", p.Prev
			}
			assert.Equal(t, want[:len(want)-len(last.Items)], backward, "back from the last page to the first")
		})
	}

	t.Run("PrunedBehindCursor", func(t *testing.T) {
		cursor := dlq.Cursor{At: midnight.AddDate(0, 0, -1), ID: 1 << 40}.Encode()
		pruned := func(t *testing.T) {
			plan, err := store.ExplainList(ctx, dlq.ListFilter{Tenants: both, Before: cursor})
			require.NoError(t, err)
			joined := strings.Join(keyLanes(plan), "\n")
			assert.Contains(t, joined, dlq.PartitionName(midnight.AddDate(0, 0, -2)), "the partitions before the cursor are read:\n%s", plan)
			assert.NotContains(t, joined, dlq.PartitionName(midnight), "the partitions past the cursor are left out:\n%s", plan)
			assert.NotContains(t, joined, dlq.PartitionName(time.Now()), "today's too")
		}
		pruned(t)
		// Once analysed (as autovacuum will, any time), the planner scans
		// these small partitions sequentially: pruned all the same.
		owner, err := pgx.Connect(ctx, db.OwnerURL)
		require.NoError(t, err)
		defer owner.Close(ctx)
		_, err = owner.Exec(ctx, `ANALYZE dead_letters`)
		require.NoError(t, err)
		pruned(t)
	})
}

// keyLanes are the scans of plan that look for a page's keys: those whose
// condition is the keyset's (dead_lettered_at, id) comparison, by index or,
// on a partition small enough that the planner prefers it, sequentially;
// not the scans that then fetch the rows of those keys.
func keyLanes(plan string) []string {
	var lanes []string
	node := ""
	for _, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "->") || node == "" {
			node = line
			continue
		}
		if strings.Contains(line, "ROW(dead_lettered_at, id)") && !slices.Contains(lanes, node) {
			lanes = append(lanes, node)
		}
	}
	return lanes
}

func itemIDs(p dlq.ListPage) []int64 {
	out := make([]int64, len(p.Items))
	for i, it := range p.Items {
		out[i] = it.ID
	}
	return out
}

// TestInsertOutlivesItsDayDroppedMeanwhile stores a dead letter for a day
// without a partition while the keeper drops the day again between the
// partition's making and the insert's next try (the keeper drops an empty
// past day; here the maker's first call makes nothing, which the insert
// sees the same way). The insert makes the day again and stores the dead
// letter as it is: not in its raw form (message id, headers and error
// class lost to a flag) because of a race that was nobody's data.
func TestInsertOutlivesItsDayDroppedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	for _, stmt := range []string{
		`ALTER FUNCTION quarantine_dead_letter_partitions(timestamptz[]) RENAME TO quarantine_dead_letter_partitions_made`,
		`CREATE TABLE partition_maker_calls (n int)`,
		`CREATE FUNCTION quarantine_dead_letter_partitions(days timestamptz[]) RETURNS integer
            LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
        BEGIN
            INSERT INTO partition_maker_calls VALUES (1);
            IF (SELECT count(*) FROM partition_maker_calls) = 1 THEN
                RETURN 0; -- made, and dropped by a keeper before the insert came back
            END IF;
            RETURN quarantine_dead_letter_partitions_made(days);
        END $$`,
		`GRANT EXECUTE ON FUNCTION quarantine_dead_letter_partitions(timestamptz[]) TO quarantine_runtime`,
	} {
		_, err := db.OwnerPool.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	at := dlq.Day(time.Now()).AddDate(0, 0, -20).Add(9 * time.Hour)
	require.NotContains(t, partitionNames(t, db), dlq.PartitionName(at))
	st := dlq.NewStore(db.Pool)
	res, err := st.Insert(ctx, []dlq.Record{dlqMessage("DROPPED", 1, "orders.refund", "refund-dropped", at)})
	require.NoError(t, err)
	assert.Len(t, res.Inserted, 1)
	assert.Empty(t, res.Raw, "not stored in its raw form")
	assert.Empty(t, res.Unstorable)
	d, err := st.BySource(ctx, "DROPPED", 1, "")
	require.NoError(t, err)
	assert.Equal(t, "refund-dropped", d.MsgID)
	assert.False(t, d.Malformed, "flags: %v", d.Flags)
	assert.Contains(t, partitionNames(t, db), dlq.PartitionName(at))
}

// TestInsertDayDroppedEachTimeIsBusyNotRefused: the day's partition is
// gone each time the insert comes back to it after making it (the
// keeper dropping it again; here the maker makes nothing, which the
// insert sees the same way), partitionAttempts times. That is nobody's
// data: Insert ends with an error the ingester retries and defers (Busy),
// nothing isolated as refused, stored in raw form or reported unstorable
// (which, five deliveries on, stores the payload-less position form).
func TestInsertDayDroppedEachTimeIsBusyNotRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	for _, stmt := range []string{
		`ALTER FUNCTION quarantine_dead_letter_partitions(timestamptz[]) RENAME TO quarantine_dead_letter_partitions_made`,
		`CREATE FUNCTION quarantine_dead_letter_partitions(days timestamptz[]) RETURNS integer
            LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
        BEGIN
            RETURN 0; -- made, and dropped by a keeper before the insert came back
        END $$`,
		`GRANT EXECUTE ON FUNCTION quarantine_dead_letter_partitions(timestamptz[]) TO quarantine_runtime`,
	} {
		_, err := db.OwnerPool.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	at := dlq.Day(time.Now()).AddDate(0, 0, -20).Add(9 * time.Hour)
	st := dlq.NewStore(db.Pool)
	res, err := st.Insert(ctx, []dlq.Record{dlqMessage("DROPPED", 1, "orders.refund", "refund-dropped", at)})
	require.Error(t, err)
	assert.True(t, dlq.Busy(err), "retried and deferred, not refused: %v", err)
	assert.False(t, dlq.Unreachable(err), "PostgreSQL answers: no reason to cut the replica off: %v", err)
	assert.Empty(t, res.Raw, "not stored in its raw form")
	assert.Empty(t, res.Unstorable, "not refused for its content")
	assert.Empty(t, res.Inserted)
}
