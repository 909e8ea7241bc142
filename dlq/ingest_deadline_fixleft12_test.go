package dlq

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixLeft12HungStatementDoesNotHoldBatch: a connection that hangs
// without an error (here: an insert waiting on a lock held elsewhere, on
// connections whose statement_timeout is off, so the server never ends
// the wait) held its batch in progress for ever: keepInProgress went on
// ticking while storeBatch waited, and nothing on the client ended the
// statement. Each ingest transaction is now given up a little after the
// server's statement_timeout (IngestConfig.StatementTimeout): the attempt
// fails, the batch is retried and handed back for others (cut off, as when
// PostgreSQL is out of reach, until it takes a write again), and once the
// lock goes it is stored, once.
func TestFixLeft12HungStatementDoesNotHoldBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	cfg := b.db.Pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "0" // the server never ends a statement
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b.store = NewStore(pool)
	const n = 3
	b.publishN(t, n, -1)
	lock, err := b.db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	// SHARE: readers go on; an insert (ROW EXCLUSIVE) waits.
	_, err = lock.Exec(ctx, `LOCK TABLE dead_letters IN SHARE MODE`)
	require.NoError(t, err)

	ic := IngestConfig{BatchSize: 100, Workers: 1, MaxWait: 50 * time.Millisecond, AckWait: time.Minute, StatementTimeout: 500 * time.Millisecond}
	deadline := ic.statementDeadline()
	require.Equal(t, 1500*time.Millisecond, deadline, "the server's timeout and a second")
	start := time.Now()
	r := b.start(t, ic, nil)
	wait.Until(t, "the hung attempt given up", deadline+5*time.Second, func() bool {
		return testutil.ToFloat64(r.metrics.StoreErrors) >= 1
	})
	t.Logf("first attempt given up after %s", time.Since(start).Round(10*time.Millisecond))
	// The batch is handed back (cutOffAfter of attempts that got no
	// answer) and delivered again, long before its ack wait: to another
	// client of the consumer, which hands it back in turn. The replica
	// takes nothing meanwhile: PostgreSQL takes no write while the lock is
	// held (pauseForPostgres), though it answers a ping.
	wait.Until(t, "the replica cut off", cutOffAfter+3*deadline+10*time.Second, r.cutOff.Load)
	cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	got := map[uint64]bool{}
	wait.Until(t, "the batch handed back and delivered to another client", 30*time.Second, func() bool {
		msgs, err := cons.Fetch(n, jetstream.FetchMaxWait(time.Second))
		require.NoError(t, err)
		for m := range msgs.Messages() {
			md, err := m.Metadata()
			require.NoError(t, err)
			got[md.Sequence.Stream] = true
			require.NoError(t, m.Nak())
		}
		return len(got) == n
	})
	t.Logf("delivered again after %s", time.Since(start).Round(10*time.Millisecond))
	assert.Zero(t, countRows(t, b.db.Pool, "true"), "nothing stored while the lock is held")

	require.NoError(t, lock.Rollback(ctx))
	b.waitRows(t, n)
	b.waitDrained(t)
	assert.Equal(t, n, countRows(t, b.db.Pool, "true"), "each stored once")
	assert.Zero(t, countRows(t, b.db.Pool, "'raw_form' = ANY(flags)"), "a hung connection is not the data's fault")
	assert.Zero(t, testutil.ToFloat64(r.metrics.Deferred))
	assert.Zero(t, testutil.ToFloat64(r.metrics.Unstorable))
}

// TestFixLeft12StoreWithin: the ingester's store bounds each statement or
// transaction a little past the server's statement_timeout; a store made
// by NewStore (the web's, the keeper's) does not.
func TestFixLeft12StoreWithin(t *testing.T) {
	t.Parallel()
	s := NewStore(nil)
	ctx, cancel := s.within(context.Background())
	cancel()
	_, bounded := ctx.Deadline()
	assert.False(t, bounded)
	in := NewIngester(IngestConfig{}, nil, s, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	ctx, cancel = in.store.within(context.Background())
	defer cancel()
	at, bounded := ctx.Deadline()
	require.True(t, bounded)
	assert.InDelta(t, float64(66*time.Second), float64(time.Until(at)), float64(time.Second), "a minute (the default) and a tenth")
	assert.Zero(t, s.deadline, "the caller's store is left as it was")
}
