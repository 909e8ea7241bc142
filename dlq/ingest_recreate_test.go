package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestIngestStreamRecreatedUnderStuckBatch: dead letters of the DLQ
// stream wait for PostgreSQL (a lock holds the only writer) when the
// stream is deleted and the console makes it and its consumer again under
// the same names. The new stream numbers from 1 again, so the old
// messages' acks would settle the new messages of the same sequences and
// their header blocks, read again by sequence, would be the new ones'.
// Once the lock goes: the old dead letters are stored but not acked; the
// one whose block is read again is stored without the new message's
// headers, flagged; and a new dead letter PostgreSQL refuses at first is
// delivered again and stored, not lost to an old ack.
func TestIngestStreamRecreatedUnderStuckBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	// PostgreSQL refuses "new 1" in every form until the trigger goes: it is nak'd.
	refuseNewOne(t, b)
	unlock, lockWaited := lockDeadLetters(t, b)

	// RetryUnstorable leaves the test seconds to drop the trigger before
	// "new 1"'s maxRefusedDeliveries-th delivery, which would store its
	// position form (content_refused) instead of waiting.
	r := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond,
		RetryUnstorable: time.Second, HealthEvery: 100 * time.Millisecond}, nil)
	ackPending := func(n int) func() bool {
		return func() bool {
			cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
			if err != nil {
				return false
			}
			info, err := cons.Info(ctx)
			return err == nil && info.NumAckPending == n
		}
	}

	// Old #1 holds the writer, waiting for the lock; old #2, whose header
	// block the NATS client cannot read, waits behind it.
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("old 0")})
	wait.Until(t, "the writer waiting for the lock", time.Minute, lockWaited)
	_, err := b.ns.DialRaw(t).Publish("dlq.acme.search.index_update", []byte("garbage \xff with no version line"), []byte("old 1"))
	require.NoError(t, err)
	wait.Until(t, "both old dead letters delivered", time.Minute, ackPending(2))

	require.NoError(t, b.js.DeleteStream(ctx, "DLQ"))
	wait.Until(t, "the DLQ stream and its consumer made again", time.Minute, func() bool {
		_, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
		return err == nil
	})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("new 1")})
	publish(t, b.js, &nats.Msg{Subject: "dlq.globex.accounts.permission_grant", Data: []byte("new 2"), Header: nats.Header{
		HeaderOriginalSubject: {"app.globex.accounts.permission_grant"}, HeaderPrincipal: {"user:globex-admin"}, HeaderOperationID: {"op-globex"},
	}})
	wait.Until(t, "both new dead letters delivered", time.Minute, ackPending(2))

	require.NoError(t, unlock())
	wait.Until(t, "new #1 refused", time.Minute, func() bool { return testutil.ToFloat64(r.metrics.Unstorable) >= 1 })
	b.waitRows(t, 3)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'old 0'"), "an old dead letter is stored, though not acked")
	old := b.row(t, "payload = 'old 1'")
	assert.Equal(t, "acme", old.Tenant)
	assert.Empty(t, old.Principal, "not the new message's principal")
	assert.Empty(t, old.OperationID)
	assert.Empty(t, old.OriginalSubject)
	assert.Nil(t, old.HeaderBlock)
	assert.Contains(t, old.Flags, "header_block_unavailable")
	assert.Contains(t, strings.Join(old.MalformedReasons, "\n"), "holds another message there")
	nw := b.row(t, "payload = 'new 2'")
	assert.Equal(t, "user:globex-admin", nw.Principal)
	assert.Equal(t, "globex", nw.Tenant)

	b.dropTrigger(t, "test_refuses_new")
	b.waitRows(t, 4)
	b.waitDrained(t)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'new 1'"), "the new dead letter an old ack would have settled is delivered again and stored")
	assert.Equal(t, 4, countRows(t, b.db.Pool, "true"))
}

// refuseNewOne has PostgreSQL refuse the dead letter whose payload is
// "new 1", in every form (a trigger of the test's database).
func refuseNewOne(t *testing.T, b *bundle) {
	t.Helper()
	_, err := b.db.OwnerPool.Exec(context.Background(), `
        CREATE FUNCTION test_refuses_new() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.payload = 'new 1'::bytea THEN RAISE EXCEPTION 'test refuses new 1'; END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_refuses_new BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_refuses_new();`)
	require.NoError(t, err)
}

// lockDeadLetters holds dead_letters locked (ACCESS EXCLUSIVE, in a
// transaction of the owner) until unlock, or the test's end, so that the
// writer waits; waited reports whether a statement of the test's database
// waits for a lock (read on a connection of its own).
func lockDeadLetters(t *testing.T, b *bundle) (unlock func() error, waited func() bool) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	lock, err := b.db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Rollback(ctx) })
	_, err = lock.Exec(ctx, `LOCK TABLE dead_letters IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	return func() error { return lock.Rollback(ctx) }, func() bool {
		var n int
		err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'`, b.db.Name).Scan(&n)
		return err == nil && n > 0
	}
}
