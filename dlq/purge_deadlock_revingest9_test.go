package dlq

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// keepAll3dRevIngest9 keeps every dead letter three days.
type keepAll3dRevIngest9 struct{}

func (keepAll3dRevIngest9) Keep(string, string, Status) (time.Duration, bool) {
	return 72 * time.Hour, true
}
func (keepAll3dRevIngest9) Longest() (time.Duration, bool) { return 72 * time.Hour, true }

// waitingOnLock waits until at least n backends of db wait for a lock,
// one of them running a query like like.
func waitingOnLock(t *testing.T, admin *pgxpool.Pool, db *testdb.DB, what, like string, n int) {
	t.Helper()
	wait.Until(t, what, 20*time.Second, func() bool {
		var all, matching int
		err := admin.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE query LIKE $2) FROM pg_stat_activity
            WHERE datname = $1 AND wait_event_type = 'Lock'`, db.Name, like).Scan(&all, &matching)
		return err == nil && all >= n && matching > 0
	})
}

// TestRevIngest9LateDeadLetterMeetsDayPurgeInADeadlock: retention empties
// a past day (purgeDay) while a late or redelivered dead letter of that day
// is stored. purgeDay holds the day's partition in SHARE mode
// (partition_hold) and later asks for ACCESS EXCLUSIVE (partition_empty's
// TRUNCATE): a lock upgrade. The ingester's batch for an old day first
// reads the stored source keys (storedKeys: ACCESS SHARE on every
// partition, that day's included), then its COPY waits behind the SHARE
// lock for ROW EXCLUSIVE on the day. Each waits for the other and
// PostgreSQL kills one with deadlock_detected: here the purge (it gives
// way; the day goes row by row, whole at a later pass), in the other
// timing the ingest (its whole batch fails, is retried after a backoff,
// counted as a store error and as "PostgreSQL unreachable" toward
// cutOffAfter, and raising quarantine_ingest_store_errors_total, which
// pages as the critical "PostgreSQL down?" alert). A 25 s stress of three
// inserters (a quarter redeliveries, a third for past days) beside keeper
// passes saw 130 inserts lost to this pair (server log: every deadlock was
// this pair; the purge's losses come on top); no row was lost or
// duplicated. Taking the day's lock once, in the mode the
// TRUNCATE needs (no upgrade), makes the ingest wait instead. (Migration
// 0047 did; it froze every page reading all days for the whole count.
// Migration 0048 keeps the upgrade but asks for it without queueing, so
// no deadlock forms: the purge gives way to the writer, 55P03, and the
// day's dead letters go as rows.)
func TestRevIngest9LateDeadLetterMeetsDayPurgeInADeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	st := NewStore(db.Pool)
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	day := Day(time.Now()).AddDate(0, 0, -10)
	rec := func(seq uint64) Record {
		return ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: seq,
			Time: day.Add(time.Hour + time.Duration(seq)*time.Second), Data: []byte("order")})
	}
	res, err := st.Insert(ctx, []Record{rec(1), rec(2)})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 2)
	// Stored long ago too (mayGo judges by the later of both times).
	_, err = db.OwnerPool.Exec(ctx, `UPDATE dead_letters SET received_at = dead_lettered_at`)
	require.NoError(t, err)
	_, err = FoldCounters(ctx, db.Pool)
	require.NoError(t, err)

	// An uncommitted row of dead_letters_purged with the first one's key
	// stops the purge after it took the day in SHARE mode (keepDayKeys
	// waits for it), so that the late dead letter comes in between.
	// (The key is read first: the blocker holds no lock on dead_letters.)
	var firstAt time.Time
	var firstKey []byte
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT dead_lettered_at, source_key FROM dead_letters WHERE source_seq = 1`).Scan(&firstAt, &firstKey))
	block, err := db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = block.Rollback(context.Background()) })
	_, err = block.Exec(ctx, `INSERT INTO dead_letters_purged (dead_lettered_at, source_key, stream, stream_seq) VALUES ($1, $2, 'DLQ', 1)`,
		firstAt, firstKey)
	require.NoError(t, err)

	var logged bytes.Buffer
	var logMu sync.Mutex
	k := NewKeeper(st, KeeperConfig{Policy: func() RetentionPolicy { return keepAll3dRevIngest9{} }}, nil,
		slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logged}, nil)))
	type passed struct {
		pass KeeperPass
		err  error
	}
	passDone := make(chan passed, 1)
	go func() {
		p, err := k.Pass(ctx)
		passDone <- passed{p, err}
	}()
	waitingOnLock(t, admin, db, "the purge holding the day, waiting for the blocker", "%INSERT INTO dead_letters_purged%", 1)

	insDone := make(chan error, 1)
	go func() {
		_, err := st.Insert(ctx, []Record{rec(3)}) // a late dead letter of the day
		insDone <- err
	}()
	waitingOnLock(t, admin, db, "the late dead letter's insert waiting for the day", "%", 2)
	require.NoError(t, block.Rollback(ctx))

	var insErr error
	select {
	case insErr = <-insDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the insert did not end")
	}
	var p passed
	select {
	case p = <-passDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the keeper pass did not end")
	}
	require.NoError(t, p.err)
	logMu.Lock()
	keeperLog := logged.String()
	logMu.Unlock()
	assert.NotContains(t, keeperLog, "40P01", "the day's purge lost a deadlock to the ingest and gave way")
	// The day's two old dead letters go in this pass, whole (the late one
	// then lands in the emptied day) or, when the purge gave way to the
	// writer (migration 0048), as rows; the late one, just stored, stays.
	var left []int64
	rows, err := db.Pool.Query(ctx, `SELECT source_seq FROM dead_letters ORDER BY source_seq`)
	require.NoError(t, err)
	left, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	assert.Equal(t, []int64{3}, left, "the day's old dead letters went in this pass (runs %+v); the late one is stored", p.pass.Runs)
	assert.NoError(t, insErr, "storing a late dead letter while retention empties its day must wait, not lose a deadlock (%s)", sqlStateOf(insErr))
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func sqlStateOf(err error) string {
	var s interface{ SQLState() string }
	if err != nil && errors.As(err, &s) {
		return s.SQLState()
	}
	return ""
}
