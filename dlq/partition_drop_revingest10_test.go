package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest10EmptyDayDropQueuesBehindAReaderAndStallsIngest: the
// keeper drops an empty past day (dropEmpty,
// quarantine_dead_letter_partition_drop, migration 0016) by LOCK TABLE
// dead_letters IN ACCESS EXCLUSIVE MODE with a lock_timeout of 2 s: a
// request that stands in the parent's lock queue. Behind any transaction
// that reads dead_letters and takes its time (a long report, an export, an
// operator's psql session, a stuck reader of any day), that request waits
// the full 2 s, and while it waits every new statement on dead_letters
// (ingest's COPY of today's dead letters, every page) queues behind it:
// one slow reader stalls ingest for everyone, at every keeper pass, for
// each past day there is to drop. Migration 0048 stopped this for the
// TRUNCATE of a day (NOWAIT, retried) but not for the drop, which locks
// the whole table, not one day. Ingest of a dead letter of today must not
// wait for the keeper's drop of an empty day ten days back.
func TestRevIngest10EmptyDayDropQueuesBehindAReaderAndStallsIngest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	st := NewStore(db.Pool)
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	t.Cleanup(admin.Close)

	old := Day(time.Now()).AddDate(0, 0, -10)
	require.NoError(t, st.EnsurePartitions(ctx, []time.Time{old}))
	today := func(seq uint64) Record {
		return ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: seq, Time: time.Now(), Data: []byte("order")})
	}
	_, err = st.Insert(ctx, []Record{today(1)}) // today's partition made and warm
	require.NoError(t, err)

	// A reader of today's dead letters that takes its time.
	reader, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = reader.Rollback(context.Background()) })
	var n int
	require.NoError(t, reader.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE dead_lettered_at >= $1`, Day(time.Now())).Scan(&n))
	require.Equal(t, 1, n)

	var parent uint32
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT 'dead_letters'::regclass::oid`).Scan(&parent))
	k := NewKeeper(st, KeeperConfig{}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan error, 1)
	go func() {
		_, err := k.Pass(ctx)
		done <- err
	}()
	// The drop's request queued for dead_letters (before the fix), or the
	// pass over without ever queueing (fixed: it gives way).
	var passErr error
	passed := false
	wait.Until(t, "the keeper's drop of the empty day waiting for dead_letters, or the pass over", 30*time.Second, func() bool {
		select {
		case passErr = <-done:
			passed = true
			return true
		default:
		}
		var waiting int
		err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
            WHERE d.datname = $1 AND NOT l.granted AND l.mode = 'AccessExclusiveLock' AND l.relation = $2`,
			db.Name, parent).Scan(&waiting)
		return err == nil && waiting > 0
	})

	// Ingest of today's next dead letter while the drop waits.
	ictx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	_, err = st.Insert(ictx, []Record{today(2)})
	took := time.Since(start)
	require.NoError(t, err, "today's dead letter stored while the keeper waits to drop an empty day of ten days ago (took %s)", took)
	if !passed {
		passErr = <-done
	}
	require.NoError(t, passErr)
}
