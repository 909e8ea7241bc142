package dlq

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// timeoutStore makes b's ingesters store through connections whose
// statements end after 300 ms (statement_timeout).
func (b *bundle) timeoutStore(t *testing.T) {
	t.Helper()
	cfg := b.db.Pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "300ms"
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b.store = NewStore(pool)
}

// publishN publishes n dead letters of acme, after setting the DLQ stream
// up (publishReady).
func (b *bundle) publishN(t *testing.T, n, slow int) {
	t.Helper()
	require.NoError(t, NewIngester(IngestConfig{}, b.js, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler)).Setup(context.Background()))
	b.publishReady(t, n, slow)
}

// publishReady publishes n dead letters of acme on the DLQ stream as it
// is; the one numbered slow (if any) has correlation id "slow" and a
// larger payload.
func (b *bundle) publishReady(t *testing.T, n, slow int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		corr, payload := fmt.Sprintf("c-%d", i), fmt.Sprintf(`{"n":%d}`, i)
		if i == slow {
			corr, payload = "slow", `{"n":"`+strings.Repeat("s", 100)+`"}`
		}
		_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: "dlq.acme.analytics.event", Data: []byte(payload), Header: nats.Header{
			HeaderOriginalSubject: {"app.acme.analytics.event"}, HeaderOriginalMsgID: {fmt.Sprintf("m-%d", i)}, HeaderCorrelationID: {corr},
		}})
		require.NoError(t, err)
	}
}

func TestBusy(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]bool{
		"57014": true, "53200": true, "53100": true, "55P03": true, "55006": true, "58030": true,
		"23514": false, "22021": false, "54000": false, "40001": false, // serialization: LostRace's
	} {
		assert.Equal(t, want, Busy(fmt.Errorf("insert: %w", &pgconn.PgError{Code: code})), code)
	}
	assert.False(t, Busy(context.Canceled))
}

// TestIngestStatementTimeoutRetried: PostgreSQL cannot finish any insert
// (the table is locked by someone else; every statement runs into
// statement_timeout, SQLSTATE 57014). Ingest retries with backoff like for
// an unreachable database: no dead letter goes to raw form or is given
// up, and once the lock goes all are stored as they are.
func TestIngestStatementTimeoutRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.timeoutStore(t)
	const n = 5
	b.publishN(t, n, -1)
	lock, err := b.db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, `LOCK TABLE dead_letters IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	r := b.start(t, IngestConfig{BatchSize: 100, Workers: 1, MaxWait: 50 * time.Millisecond, RetryUnstorable: 200 * time.Millisecond}, nil)
	wait.Until(t, "several attempts, the smallest alone among them", time.Minute, func() bool {
		return testutil.ToFloat64(r.metrics.StoreErrors) >= busyAttempts+1
	})
	require.NoError(t, lock.Rollback(ctx))
	b.waitRows(t, n)
	b.waitDrained(t)
	assert.Zero(t, countRows(t, b.db.Pool, "'raw_form' = ANY(flags)"), "a timeout is not the data's fault")
	assert.Zero(t, testutil.ToFloat64(r.metrics.RawForm.WithLabelValues("acme")))
	assert.Zero(t, testutil.ToFloat64(r.metrics.Unstorable))
	assert.Zero(t, testutil.ToFloat64(r.metrics.Deferred), "PostgreSQL, not one record, was busy: nothing set aside")
}

// TestIngestSlowRecordDeferredNotRaw: one dead letter whose insert always
// runs past statement_timeout (a trigger sleeps on it). The others are
// stored; it is neither stored in raw form nor acked, but nak'd to come
// again, and once the cause is gone it is stored in its parsed form.
func TestIngestSlowRecordDeferredNotRaw(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.timeoutStore(t)
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_slow() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.correlation_id = 'slow' THEN PERFORM pg_sleep(5); END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_slow BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_slow();`)
	require.NoError(t, err)
	const n, slow = 10, 6
	b.publishN(t, n, slow)

	r := b.start(t, IngestConfig{BatchSize: 100, Workers: 1, MaxWait: 200 * time.Millisecond, RetryUnstorable: 500 * time.Millisecond}, nil)
	b.waitRows(t, n-1)
	wait.Until(t, "the slow one set aside", time.Minute, func() bool { return testutil.ToFloat64(r.metrics.Deferred) >= 1 })
	assert.Zero(t, countRows(t, b.db.Pool, "'raw_form' = ANY(flags)"), "never in raw form")
	assert.Zero(t, countRows(t, b.db.Pool, "correlation_id = 'slow'"))
	assert.Zero(t, testutil.ToFloat64(r.metrics.Unstorable))

	b.dropTrigger(t, "test_slow")
	b.waitRows(t, n)
	b.waitDrained(t)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "correlation_id = 'slow' AND NOT 'raw_form' = ANY(flags)"), "stored as it is")
	assert.Zero(t, countRows(t, b.db.Pool, "'raw_form' = ANY(flags)"))
}
