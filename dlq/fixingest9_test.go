package dlq

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixIngest9OtherDaysDoNotWaitForADaysPurge: while retention holds a
// past day's partition as TRUNCATE does (holdDay, until its commit), a
// batch of late or redelivered dead letters of other days, which looks up
// the stored source keys first, is stored at once: the look-up reads only
// the partitions of the batch's days. A batch of the held day waits and
// is stored once the purge ends; a redelivery (a stored time with
// nanoseconds past the microsecond, which the look-up's text must not
// round) is still found stored.
func TestFixIngest9OtherDaysDoNotWaitForADaysPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	st := NewStore(db.Pool)
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	held, other := Day(time.Now()).AddDate(0, 0, -10), Day(time.Now()).AddDate(0, 0, -11)
	rec := func(day time.Time, seq uint64) Record {
		return ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: seq,
			Time: day.Add(time.Hour + time.Duration(seq)*time.Second + 999*time.Nanosecond), Data: []byte("order")})
	}
	res, err := st.Insert(ctx, []Record{rec(held, 1), rec(other, 2)})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 2)

	purge, err := db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = purge.Rollback(context.Background()) })
	_, err = purge.Exec(ctx, `SELECT quarantine_dead_letter_partition_hold($1)`, PartitionName(held))
	require.NoError(t, err)

	quick, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err = st.Insert(quick, []Record{rec(other, 2), rec(other, 3)})
	require.NoError(t, err, "a batch of another day does not wait for the held day")
	assert.Len(t, res.Inserted, 1, "the redelivery is found stored, the late dead letter stored")

	waited := make(chan error, 1)
	go func() {
		res, err := st.Insert(ctx, []Record{rec(held, 1), rec(held, 4)})
		if err == nil && len(res.Inserted) != 1 {
			err = assert.AnError
		}
		waited <- err
	}()
	waitingOnLock(t, admin, db, "the held day's batch waiting for the purge", "%", 1)
	require.NoError(t, purge.Rollback(ctx))
	select {
	case err := <-waited:
		require.NoError(t, err, "stored once the purge ended, the redelivery found stored")
	case <-time.After(30 * time.Second):
		t.Fatal("the held day's batch did not end")
	}
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&n))
	assert.Equal(t, 4, n, "one row per message")
}

// TestFixIngest9LostRaceIsNotPostgreSQLDown: a deadlock (40P01) or a
// serialization failure (40001) is a lock race the transaction lost, with
// PostgreSQL answering: not Unreachable (which cuts a replica off after
// cutOffAfter), not Busy (which probes and bisects the batch), and not the
// data's (isolate does not split the batch for it).
func TestFixIngest9LostRaceIsNotPostgreSQLDown(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"40P01", "40001"} {
		err := fmt.Errorf("insert: %w", &pgconn.PgError{Code: code})
		assert.True(t, LostRace(err), code)
		assert.False(t, Unreachable(err), code)
		assert.False(t, Busy(err), code)
	}
	for _, err := range []error{&pgconn.PgError{Code: "08006"}, &pgconn.PgError{Code: "55P03"}, &pgconn.PgError{Code: "23505"}, context.Canceled} {
		assert.False(t, LostRace(err), "%v", err)
	}
}

// TestFixIngest9DeadlockedBatchRetriedNotAStoreError: the ingester's
// transaction storing a batch is killed as a deadlock's victim (it holds
// today's partition for its COPY and waits to record the counters' deltas;
// another transaction holds the deltas and asks for the partition). The
// batch is tried again at once and stored once the other transaction ends;
// it is counted as a lost race (quarantine_ingest_store_conflicts_total),
// neither as a store error (the critical "PostgreSQL down?" alert) nor
// toward cutting the replica off.
func TestFixIngest9DeadlockedBatchRetriedNotAStoreError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	// PostgreSQL looks for a deadlock once, deadlock_timeout after a
	// transaction starts waiting, in the one that waited that long first.
	// The batch waits first; the test closes the circle after it. So that
	// the batch is the one that finds the circle however slowly a loaded
	// machine lets the test close it, the batch's connections look after
	// 10 s, and the test's own transaction never looks.
	_, err = admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{b.db.Name}.Sanitize()+" SET deadlock_timeout = '10s'")
	require.NoError(t, err)
	b.db.Pool.Reset() // new connections take the setting
	r := b.start(t, IngestConfig{BatchSize: 10, Workers: 1, MaxWait: 10 * time.Millisecond}, nil)
	// Today's partition exists before the batch comes (none is made in
	// the batch's transaction).
	require.NoError(t, b.store.EnsurePartitions(ctx, []time.Time{time.Now()}))

	su, err := testdb.WithDatabase(testdb.ServerURL(t), b.db.Name)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, su) // deadlock_timeout is a superuser's setting
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, `SET deadlock_timeout = '10min'`)
	require.NoError(t, err)
	other, err := conn.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Rollback(context.Background()) })
	_, err = other.Exec(ctx, `LOCK TABLE dead_letter_deltas IN SHARE MODE`)
	require.NoError(t, err)
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders.created", Data: []byte("order")})
	waitingOnLock(t, admin, b.db, "the batch's COPY done, its deltas waiting", "%dead_letter_deltas%", 1)
	// The circle: PostgreSQL kills the batch's transaction, which waited
	// first and so looks for a deadlock first.
	lockCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = other.Exec(lockCtx, `LOCK TABLE `+PartitionName(Day(time.Now()))+` IN SHARE MODE`)
	require.NoError(t, err, "the other transaction wins the deadlock")
	wait.Until(t, "the lost race counted", 30*time.Second, func() bool { return testutil.ToFloat64(r.metrics.StoreConflicts) >= 1 })
	require.NoError(t, other.Rollback(ctx))

	b.waitRows(t, 1)
	b.waitDrained(t)
	assert.Zero(t, testutil.ToFloat64(r.metrics.StoreErrors), "a lost race is not PostgreSQL out of reach")
	assert.False(t, r.cutOff.Load())
	assert.Equal(t, 1, countRows(t, b.db.Pool, "true"))
}

// TestFixIngest9DayPurgeGivesWayToAReader: a transaction reading a past
// day (a long report) holds the lock emptying the day must wait for; every
// later reader and ingest of the day would queue behind that wait. The
// purge does not queue for it (migration 0048: it asks without waiting,
// for at most 300 ms), gives way, and the day's dead letters go as rows
// in the same pass, while the reader still reads.
func TestFixIngest9DayPurgeGivesWayToAReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, st, day := pastDayOfThree(t)

	reader := readDay(t, db, day)

	k := NewKeeper(st, KeeperConfig{Policy: func() RetentionPolicy { return keepAll3dRevIngest9{} }}, nil,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	passCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p, err := k.Pass(passCtx)
	require.NoError(t, err, "the pass ends while the reader still reads")
	var rows int64
	for _, r := range p.Runs {
		assert.NotEqual(t, PartitionName(day), r.Partition, "the day is not emptied whole under a reader")
		rows += r.Rows
	}
	assert.EqualValues(t, 3, rows, "the day's dead letters went as rows")
	require.NoError(t, reader.Rollback(ctx))
}

// pastDayOfThree stores three dead letters of a day ten days ago in a
// database of the test's own, as if they arrived then (received_at), and
// counts them: a day retention may purge.
func pastDayOfThree(t *testing.T) (*testdb.DB, *Store, time.Time) {
	t.Helper()
	ctx := context.Background()
	db := testdb.New(t)
	st := NewStore(db.Pool)
	day := Day(time.Now()).AddDate(0, 0, -10)
	var recs []Record
	for seq := uint64(1); seq <= 3; seq++ {
		recs = append(recs, ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: seq,
			Time: day.Add(time.Hour + time.Duration(seq)*time.Second), Data: []byte("order")}))
	}
	_, err := st.Insert(ctx, recs)
	require.NoError(t, err)
	_, err = db.OwnerPool.Exec(ctx, `UPDATE dead_letters SET received_at = dead_lettered_at`)
	require.NoError(t, err)
	_, err = FoldCounters(ctx, db.Pool)
	require.NoError(t, err)
	return db, st, day
}

// readDay opens a transaction that has read day's three dead letters and
// keeps its lock on the day until the test rolls it back or ends (a long
// report).
func readDay(t *testing.T, db *testdb.DB, day time.Time) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	reader, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = reader.Rollback(context.Background()) })
	var n int
	require.NoError(t, reader.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE dead_lettered_at >= $1 AND dead_lettered_at < $2`,
		day, day.AddDate(0, 0, 1)).Scan(&n))
	require.Equal(t, 3, n)
	return reader
}
