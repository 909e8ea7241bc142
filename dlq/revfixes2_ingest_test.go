package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestSlowRecordIsSetAsideUnderALongStatementTimeout (review rev-fixes2):
// TestIngestSlowRecordDeferredNotRaw proves one slow record is set aside
// with a 300 ms statement_timeout; ingest runs with
// DATABASE_WORKER_STATEMENT_TIMEOUT, 1 minute by default. storeBatch now
// marks the replica cut off from PostgreSQL once a batch has failed for
// cutOffAfter (10 s), measured before it reaches busyAttempts (3) and the
// probe and bisection that set the slow record aside: with statements that
// time out after more than ~5 s, the second failure already cuts the
// replica off, it hands the whole batch back, pings PostgreSQL (which
// answers at once), takes the same batch again, and so on. The slow record
// is never set aside, and the dead letters batched with it are never
// stored: the runbook's "dead letter not stored yet ... while the others
// are stored" no longer holds.
func TestSlowRecordIsSetAsideUnderALongStatementTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	cfg := b.db.Pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "5500ms"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b.store = NewStore(pool)
	_, err = b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_slow() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.correlation_id = 'slow' THEN PERFORM pg_sleep(30); END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_slow BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_slow();`)
	require.NoError(t, err)
	const n, slow = 2, 1
	b.publishN(t, n, slow)

	r := b.start(t, IngestConfig{BatchSize: 100, Workers: 1, MaxWait: 200 * time.Millisecond, RetryUnstorable: 500 * time.Millisecond}, nil)
	// Three attempts of 5.5 s, a probe, then the bisection: the other one is
	// stored within about 25 s, and the slow one set aside.
	wait.Until(t, "the slow one set aside", 90*time.Second, func() bool { return testutil.ToFloat64(r.metrics.Deferred) >= 1 })
	assert.Equal(t, 1, countRows(t, b.db.Pool, "correlation_id <> 'slow'"), "the dead letter batched with the slow one is stored")
}
