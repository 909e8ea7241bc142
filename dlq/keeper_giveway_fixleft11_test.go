package dlq

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// recordedLogs keeps the records a logger writes.
type recordedLogs struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recordedLogs) Enabled(context.Context, slog.Level) bool { return true }
func (r *recordedLogs) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}
func (r *recordedLogs) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recordedLogs) WithGroup(string) slog.Handler      { return r }

// about returns the records whose message holds text, and each one's
// attributes as text.
func (r *recordedLogs) about(text string) (levels []slog.Level, attrs []map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.records {
		if !strings.Contains(rec.Message, text) {
			continue
		}
		m := map[string]string{}
		rec.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
		levels, attrs = append(levels, rec.Level), append(attrs, m)
	}
	return levels, attrs
}

// TestFixLeft11DropGivingWayRepeatedlyWarnsOnce: a session keeps
// dead_letters in use across keeper passes, so the drop of an empty past
// day gives way at each: the first passes say so at INFO; the third in a
// row says it at WARN, once, naming the session that holds the table (its
// pid); the fourth is INFO again. Once the table is free the day is
// dropped, and a new streak starts from nothing.
func TestFixLeft11DropGivingWayRepeatedlyWarnsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	st := NewStore(db.Pool)
	old := Day(time.Now()).AddDate(0, 0, -10)
	require.NoError(t, st.EnsurePartitions(ctx, []time.Time{old}))

	reader, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = reader.Rollback(context.Background()) })
	var n int
	require.NoError(t, reader.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE dead_lettered_at >= $1`, Day(time.Now())).Scan(&n))
	var pid int
	require.NoError(t, reader.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))

	logs := &recordedLogs{}
	k := NewKeeper(st, KeeperConfig{}, nil, slog.New(logs))
	const busy = "dead_letters is busy"
	for range giveWayWarnAfter + 1 {
		p, err := k.Pass(ctx)
		require.NoError(t, err)
		require.Zero(t, p.Dropped)
	}
	levels, attrs := logs.about(busy)
	require.Len(t, levels, giveWayWarnAfter+1, "one line a pass")
	for i, l := range levels {
		want := slog.LevelInfo
		if i+1 == giveWayWarnAfter {
			want = slog.LevelWarn
		}
		assert.Equal(t, want, l, "pass %d", i+1)
		assert.Equal(t, strconv.Itoa(i+1), attrs[i]["passes_in_a_row"])
		assert.Equal(t, PartitionName(old), attrs[i]["partition"])
	}
	held := attrs[giveWayWarnAfter-1]["held_by"]
	assert.Contains(t, held, "pid "+strconv.Itoa(pid), "the warning names who holds the table")
	assert.Contains(t, held, "AccessShareLock")

	require.NoError(t, reader.Rollback(ctx))
	p, err := k.Pass(ctx)
	require.NoError(t, err)
	assert.Positive(t, p.Dropped)
	assert.Empty(t, k.giveWays, "the streak ends when the drop goes through")
}

// TestLockHoldersNameOnlyThisDatabasesSessions: the keeper's warning names
// the sessions that hold dead_letters in its own database, not another
// database's whose dead_letters has the same oid (one made from the same
// template; pg_locks shows every database's locks). Before, a busy
// cluster's other databases filled the warning's five names and pushed
// out the one the keeper gave way to.
func TestLockHoldersNameOnlyThisDatabasesSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mine, other := testdb.New(t), testdb.New(t)
	var mineOID, otherOID uint32
	require.NoError(t, mine.Pool.QueryRow(ctx, `SELECT 'dead_letters'::regclass::oid`).Scan(&mineOID))
	require.NoError(t, other.Pool.QueryRow(ctx, `SELECT 'dead_letters'::regclass::oid`).Scan(&otherOID))
	require.Equal(t, mineOID, otherOID, "both databases come from one template: their dead_letters share an oid")

	hold := func(db *testdb.DB) int {
		tx, err := db.Pool.Begin(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		var n, pid int
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&n))
		require.NoError(t, tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
		return pid
	}
	otherPID := hold(other) // the longer in a transaction: listed first, were it read
	minePID := hold(mine)

	conn, err := mine.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	held := lockHolders(ctx, conn.Conn(), PartitionName(Day(time.Now())))
	assert.Contains(t, held, "pid "+strconv.Itoa(minePID)+" (", "the session holding this database's dead_letters is named")
	assert.NotContains(t, held, "pid "+strconv.Itoa(otherPID)+" (", "another database's session is not")
}
