package dlq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// deadlinePool is a pool on b's database whose server never ends a
// statement (statement_timeout off: what hangs, hangs) with at most
// maxConns connections, and a store on it that gives up a statement
// after d, as the ingester's does.
func (b *bundle) deadlinePool(t *testing.T, maxConns int32, d time.Duration) (*pgxpool.Pool, *Store) {
	t.Helper()
	cfg := b.db.Pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "0"
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, NewStore(pool).withDeadline(d)
}

// TestFixIngest13InTxBoundsEachStatement: the store's deadline bounds each
// statement of an inTx transaction (Exec, QueryRow, the rows of a Query
// until they are read, COMMIT), never the transaction as a whole: three
// statements of 0.6 s each under a deadline of 1 s are a transaction of
// 1.8 s that PostgreSQL answered all along, and it commits; one statement
// that does not answer within the deadline fails the transaction as
// Unreachable, after about the deadline.
func TestFixIngest13InTxBoundsEachStatement(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, s := b.deadlinePool(t, 2, time.Second)

	start := time.Now()
	err := s.inTx(ctx, func(tx boundedTx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_sleep(0.6)`); err != nil {
			return err
		}
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM pg_sleep(0.6)`).Scan(&one); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT g FROM generate_series(1, 3) g, pg_sleep(0.6)`)
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		assert.Equal(t, 3, n)
		_, err = tx.Exec(ctx, `CREATE TEMP TABLE fixingest13_committed (x int)`)
		return err
	})
	require.NoError(t, err, "each statement answered inside the deadline: the transaction of %s is not given up", time.Since(start))
	assert.Greater(t, time.Since(start), 1800*time.Millisecond)

	start = time.Now()
	err = s.inTx(ctx, func(tx boundedTx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_sleep(0.5)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_sleep(30)`) // no answer: a hung connection
		return err
	})
	require.Error(t, err)
	assert.True(t, Unreachable(err), "a statement with no answer is PostgreSQL out of reach: %v", err)
	assert.False(t, Busy(err))
	assert.Less(t, time.Since(start), 5*time.Second, "given up about the deadline after the statement began")
}

// TestFixIngest13InTxWaitForConnectionBounded: the wait for a connection
// of the pool has the deadline of its own: with the pool's one connection
// held elsewhere, inTx gives up after about the deadline, as out of reach,
// and runs nothing; with it released, the same transaction runs.
func TestFixIngest13InTxWaitForConnectionBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	pool, s := b.deadlinePool(t, 1, time.Second)
	held, err := pool.Acquire(ctx)
	require.NoError(t, err)

	ran := false
	start := time.Now()
	err = s.inTx(ctx, func(tx boundedTx) error { ran = true; return nil })
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded) && Unreachable(err), "%v", err)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.False(t, ran)

	held.Release()
	require.NoError(t, s.inTx(ctx, func(tx boundedTx) error { ran = true; return nil }))
	assert.True(t, ran)
}

// TestFixIngest13CanarySlowTransactionAnswers: the canary is a
// transaction of the batch's statements too (the ids, the COPY, the
// deltas): when each of its inserts takes 0.7 s under a deadline of 1 s,
// it took 1.4 s in all and was given up as PostgreSQL out of reach, so
// that storeBatch took PostgreSQL for busy for everyone and never
// narrowed a slow batch down. It works now: PostgreSQL answered.
func TestFixIngest13CanarySlowTransactionAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, s := b.deadlinePool(t, 2, time.Second)
	rec := ParseDLQ(canaryStream, Received{Subject: canaryStream + ".canary.canary", Stream: canaryStream, Seq: 1, Time: time.Now(), Data: []byte("canary")})
	b.slowTenantInserts(t, rec.Tenant, 0.7)

	start := time.Now()
	require.NoError(t, s.Canary(ctx))
	assert.Greater(t, time.Since(start), 1400*time.Millisecond, "both inserts were slow")
	assert.Zero(t, countRows(t, b.db.Pool, "true"), "the canary is never kept")
}

// TestFixIngest13SetUpAgainWhileWatchersHang: Run sets ingest up again
// (again, here: the DLQ consumer deleted) with setUp, which announces the
// watched streams in ingest_watchers. With that table not answering, the
// announce had no deadline and held Run's loop, and with it DLQ ingest,
// for as long as it hung. It is given up now, and only the advisory side
// waits for the next check: the advisory stream is consumed with the
// subjects it has, and the dead letters published meanwhile are stored.
func TestFixIngest13SetUpAgainWhileWatchersHang(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, b.store = b.deadlinePool(t, 4, 0)
	ic := IngestConfig{Watch: b.watchOrders(t), BatchSize: 100, Workers: 1, MaxWait: 50 * time.Millisecond,
		StatementTimeout: 500 * time.Millisecond, HealthEvery: time.Hour}
	b.start(t, ic, nil)

	lock, err := b.db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, `LOCK TABLE ingest_watchers IN ACCESS EXCLUSIVE MODE`) // every statement on it waits
	require.NoError(t, err)

	require.NoError(t, b.js.DeleteConsumer(ctx, "DLQ", "quarantine-ingest"))
	// Published on the stream as it is: publishN's own set-up would make
	// the consumer again beside the running ingester's, and nats-server
	// could fail one of the two (an API error 500, its metadata file gone
	// under it), as it did once in CI.
	b.publishReady(t, 3, -1)
	wait.Until(t, "the dead letters stored while ingest_watchers does not answer", 30*time.Second, func() bool {
		return countRows(t, b.db.Pool, "true") == 3
	})
	b.waitDrained(t) // and acked: consumed by a session of the consumer made again
}

// TestFixIngest13DropUnwatchedPutsBackAStreamAnnouncedDuringIt: JetStream
// has no compare-and-set on a stream's configuration, so a replica that
// announces a stream and puts its subjects on the advisory stream between
// dropUnwatched's read of the list and its update (here: the hook right
// before the update) has them taken off by that update, made from the
// stream as read before. dropUnwatched reads the list again after its
// update and puts them back; what it was there to take off (FORMER, no
// replica watches it) stays off.
func TestFixIngest13DropUnwatchedPutsBackAStreamAnnouncedDuringIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	old, _ := b.idle(t, IngestConfig{Watch: b.watchOrders(t)})
	adv, err := b.js.Stream(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	cfg := adv.CachedInfo().Config
	cfg.Subjects = append(cfg.Subjects, advisorySubjects("FORMER")...) // a stream no replica watches any more
	_, err = b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	both, err := ParseWatchStreams("ORDERS,EMAILS")
	require.NoError(t, err)
	announced := false
	old.beforeStreamUpdate = func() {
		if !announced {
			announced = true
			b.idle(t, IngestConfig{Watch: both}) // announces EMAILS, puts its subjects on the stream
		}
	}
	require.NoError(t, old.dropUnwatched(ctx, []string{"ORDERS"}))
	require.True(t, announced, "the drop reached its update")
	s, err := b.js.Stream(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	subjects := s.CachedInfo().Config.Subjects
	assert.Subset(t, subjects, append(advisorySubjects("ORDERS"), advisorySubjects("EMAILS")...), "EMAILS announced during the drop")
	assert.NotContains(t, subjects, advisorySubjects("FORMER")[0], "no replica watches FORMER")
}
