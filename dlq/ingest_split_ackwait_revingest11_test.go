package dlq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest11SplitLetsAckWaitExpire: storeBatch keeps the batch's
// messages in progress between whole attempts ("keep them ours while we
// wait"), but not while it narrows a busy batch down (canary, split,
// bisect, a lone record's busyAttempts tries with backoff). That narrowing
// costs about 2·log2(n) statements plus three tries of the culprit, each
// as long as the culprit's statement runs before it fails (up to the
// statement timeout: a minute in production, the default AckWait too), so
// JetStream's AckWait runs out under it: the whole batch, healthy dead
// letters included, is delivered again while the first writer still works
// on it, and the redelivered batch (the culprit with it) is narrowed down
// all over again, by another writer or replica when there is one. Here one
// record's insert runs 450 ms and then fails busy (57014) every time; with
// an AckWait of 1 s no message of the batch should be delivered a second
// time while the ingester is storing it.
func TestRevIngest11SplitLetsAckWaitExpire(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_slow_busy_ri11() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.payload = 'slow'::bytea THEN
                PERFORM pg_sleep(0.45);
                RAISE EXCEPTION 'canceling statement due to statement timeout' USING ERRCODE = '57014';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_slow_busy_ri11 BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_slow_busy_ri11();`)
	require.NoError(t, err)
	cfg := IngestConfig{Workers: 1, MaxWait: 300 * time.Millisecond, AckWait: time.Second, RetryUnstorable: 10 * time.Minute}
	b.start(t, cfg, nil).stop() // makes the stream and consumer; the dead letters then come in one batch

	const healthy = 7
	for i := range healthy {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(fmt.Sprintf("healthy-%d", i))})
	}
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("slow")})
	r := b.start(t, cfg, nil)

	wait.Until(t, "the healthy dead letters stored and the slow one deferred", time.Minute, func() bool {
		return countRows(t, b.db.Pool, "payload <> 'slow'::bytea") == healthy && sumCounterVec(t, r.metrics.Deferred) >= 1
	})
	cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	info, err := cons.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(healthy+1), info.Delivered.Consumer,
		"each dead letter delivered once: none redelivered because its AckWait ran out while the ingester narrowed the batch down")
}

// TestRevIngest11SlowRecordTakesEveryWriter: the same defect with two
// writers (DefaultIngestWorkers is more): the batch delivered again while
// the first writer narrows it down goes to the second writer, which
// starts over on it (three whole attempts, the canary, the split) while
// the first is still at it, so one slow dead letter occupies both writers
// at once and every other dead letter waits for a writer. (In production
// the worker statement timeout, a minute, equals the default AckWait, so a
// single statement that runs to its timeout outlasts the AckWait even
// before the batch is narrowed down.) The slow record's statement should
// only ever run in one writer at a time.
func TestRevIngest11SlowRecordTakesEveryWriter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE SEQUENCE test_overlap_ri11;
        CREATE FUNCTION test_slow_busy2_ri11() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.payload = 'slow'::bytea THEN
                IF NOT pg_try_advisory_xact_lock(4711) THEN
                    PERFORM nextval('test_overlap_ri11'); -- another writer is inserting it right now
                END IF;
                PERFORM pg_sleep(0.45);
                RAISE EXCEPTION 'canceling statement due to statement timeout' USING ERRCODE = '57014';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_slow_busy2_ri11 BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_slow_busy2_ri11();`)
	require.NoError(t, err)
	cfg := IngestConfig{Workers: 2, MaxWait: 300 * time.Millisecond, AckWait: time.Second, RetryUnstorable: 10 * time.Minute}
	b.start(t, cfg, nil).stop()

	const healthy = 7
	for i := range healthy {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(fmt.Sprintf("healthy-%d", i))})
	}
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("slow")})

	// Whether the slow record's insert ever ran in two sessions at once.
	overlapped := func() bool {
		var called bool
		require.NoError(t, b.db.OwnerPool.QueryRow(ctx, `SELECT is_called FROM test_overlap_ri11`).Scan(&called))
		return called
	}
	r := b.start(t, cfg, nil)
	wait.Until(t, "the healthy dead letters stored and the slow one deferred, by every writer that took it", 2*time.Minute, func() bool {
		return countRows(t, b.db.Pool, "payload <> 'slow'::bytea") == healthy && sumCounterVec(t, r.metrics.Deferred) >= 1 ||
			overlapped()
	})
	assert.False(t, overlapped(), "the slow dead letter's insert ran in two writers at once: its batch, delivered again while being narrowed down, took the second writer too")
}

// TestRevIngest11StatementOutlastsAckWait: the same defect within one
// statement. The defaults make it the rule: DATABASE_WORKER_STATEMENT_TIMEOUT
// (ingest's statements) and INGEST_ACK_WAIT are both a minute, and the
// start refuses only an AckWait shorter than INGEST_MAX_WAIT, so a batch
// whose statement runs to its timeout has outlasted its AckWait before its
// first attempt fails, and InProgress, sent only between attempts, comes
// too late. Here one record's insert runs 1.3 s (then fails busy) with an
// AckWait of 1 s: the batch should still be delivered once.
func TestRevIngest11StatementOutlastsAckWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_slower_busy_ri11() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.payload = 'slow'::bytea THEN
                PERFORM pg_sleep(1.3);
                RAISE EXCEPTION 'canceling statement due to statement timeout' USING ERRCODE = '57014';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_slower_busy_ri11 BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_slower_busy_ri11();`)
	require.NoError(t, err)
	cfg := IngestConfig{Workers: 1, MaxWait: 300 * time.Millisecond, AckWait: time.Second, RetryUnstorable: 10 * time.Minute}
	b.start(t, cfg, nil).stop()

	const healthy = 3
	for i := range healthy {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(fmt.Sprintf("healthy-%d", i))})
	}
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("slow")})
	r := b.start(t, cfg, nil)

	wait.Until(t, "the healthy dead letters stored and the slow one deferred", 2*time.Minute, func() bool {
		return countRows(t, b.db.Pool, "payload <> 'slow'::bytea") == healthy && sumCounterVec(t, r.metrics.Deferred) >= 1
	})
	info := b.consumerInfo(t)
	assert.Equal(t, uint64(healthy+1), info.Delivered.Consumer,
		"each dead letter delivered once: none redelivered because a statement ran past its AckWait")
}
