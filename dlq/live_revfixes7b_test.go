package dlq

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevFixes7bPartitionLockTimeoutNotContentRefusal
//
// Defect (high): a dead letter for a day without a partition whose
// partition cannot be made within the statement timeout (the ATTACH waits
// behind an ANALYZE or VACUUM of dead_letters, a CREATE INDEX
// CONCURRENTLY, another maker: a lock, 57014) is taken as refused for its content. Insert
// wraps the partition maker's error as text ("%w (no partition for its
// day: %v)") around the routing error (23514), so Busy and Unreachable
// see a check violation and isolate reports the record refused, in its
// parsed and then its raw form. Since fix-live7, once the message's
// NumDelivered reaches 5 (five deliveries of such a lock, or fewer after
// an outage handed it back) and the lock ends before the position form's
// own attempt, the dead letter is stored as a payload-less,
// header-less position form flagged content_refused and acked: its
// payload and headers are lost for replay for good, though nothing of its
// content was ever refused. Before fix-live7 it was at worst stored in
// raw form, payload kept.
//
// Expected: a partition that could not be made for a reason not the
// data's (Busy/Unreachable of the maker's error) is no refusal: the batch
// is retried or deferred, and once the lock ends the dead letter is stored
// whole (its payload, its headers), never in its position form.
func TestRevFixes7bPartitionLockTimeoutNotContentRefusal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	// The ingester's statements end after a statement timeout, as the
	// workers' pool's do (a minute in production; short here).
	cfg, err := pgxpool.ParseConfig(b.db.URL)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "300"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b.store = NewStore(pool)

	// Today's day has no partition yet (the keeper behind; a backlog of
	// an earlier day is the same), and an administrator's ANALYZE holds
	// dead_letters in SHARE UPDATE EXCLUSIVE: rows go in, a partition
	// cannot be attached.
	_, err = b.db.OwnerPool.Exec(ctx, `DROP TABLE IF EXISTS `+PartitionName(time.Now()))
	require.NoError(t, err)
	lock, err := b.db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Rollback(context.Background()) })
	_, err = lock.Exec(ctx, `LOCK TABLE ONLY dead_letters IN SHARE UPDATE EXCLUSIVE MODE`)
	require.NoError(t, err)

	// The lock ends after the fifth delivery's parsed and raw forms were
	// tried, before anything else is stored.
	var batches atomic.Int32
	hook := func(int) bool {
		if batches.Add(1) == maxRefusedDeliveries {
			require.NoError(t, lock.Commit(context.Background()))
		}
		return true
	}
	r := b.start(t, IngestConfig{Workers: 1, MaxWait: 10 * time.Millisecond, RetryUnstorable: 100 * time.Millisecond}, hook)

	m := &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(`{"order":"precious"}`), Header: nats.Header{}}
	m.Header.Set("X-Trace", "trace-7")
	publish(t, b.js, m)

	b.waitRows(t, 1)
	b.waitDrained(t)
	t.Logf("deliveries taken as refused in every form: %v", testutil.ToFloat64(r.metrics.Unstorable))
	d := b.row(t, "source_seq = 1")
	assert.NotContains(t, d.Flags, "content_refused", "a lock on making the partition is no refusal of the content: %v", d.MalformedReasons)
	assert.Equal(t, []byte(`{"order":"precious"}`), d.Payload, "the payload kept for replay")
	assert.False(t, d.PayloadUnavailable)
}

// TestRevFixes7bEveryRowRefusedEndingNotTakenAsContent
//
// Defect (low): whether PostgreSQL refuses a dead letter for its content
// or refuses every row (a trigger, a revoked grant, a constraint a
// migration adds and fixes) is judged only by the position form's own
// insert, a statement after the raw form's. When what refused every row
// ends between the two (the grant given back, the migration done), a
// dead letter on its 5th delivery or later (every one of a backlog after
// an outage handed it back) is stored payload-less, flagged
// content_refused and acked, though PostgreSQL would now take it whole:
// its payload and headers are lost for replay.
//
// Expected: the position form only for a dead letter PostgreSQL still
// refuses whole when its position form is taken (e.g. try its raw form
// again first, in the same step): here it is stored whole.
func TestRevFixes7bEveryRowRefusedEndingNotTakenAsContent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_refuses_all() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'test refuses every row'; END $$;
        CREATE TRIGGER test_refuses_all BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_refuses_all();`)
	require.NoError(t, err)
	// What refused every row ends after the fifth delivery's parsed and
	// raw forms were refused.
	var batches atomic.Int32
	hook := func(int) bool {
		if batches.Add(1) == maxRefusedDeliveries {
			b.dropTrigger(t, "test_refuses_all")
		}
		return true
	}
	b.start(t, IngestConfig{Workers: 1, MaxWait: 10 * time.Millisecond, RetryUnstorable: 100 * time.Millisecond}, hook)

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("ok")})
	b.waitRows(t, 1)
	b.waitDrained(t)
	d := b.row(t, "source_seq = 1")
	assert.NotContains(t, d.Flags, "content_refused", "PostgreSQL takes every row again: %v", d.MalformedReasons)
	assert.Equal(t, []byte("ok"), d.Payload, "stored whole")
}
