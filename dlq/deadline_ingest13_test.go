package dlq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// slowTenantInserts makes each insert of a row of tenant into dead_letters,
// and into dead_letter_deltas, take secs seconds in PostgreSQL (a
// trigger): a PostgreSQL that answers every statement, slowly.
func (b *bundle) slowTenantInserts(t *testing.T, tenant string, secs float64) {
	t.Helper()
	_, err := b.db.OwnerPool.Exec(context.Background(), fmt.Sprintf(`
        CREATE FUNCTION rev13_slow_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.tenant = '%[1]s' THEN
                PERFORM pg_sleep(%[2]g);
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER rev13_slow_tenant BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION rev13_slow_tenant();
        CREATE TRIGGER rev13_slow_tenant BEFORE INSERT ON dead_letter_deltas FOR EACH ROW EXECUTE FUNCTION rev13_slow_tenant();`,
		tenant, secs))
	require.NoError(t, err)
}

// TestRevIngest13SlowTransactionTakenForUnreachable: the client-side
// deadline of round 12 (IngestConfig.StatementTimeout, Store.within) is
// computed for ONE statement (the server's statement_timeout and a tenth
// more, at least a second) but applied to a whole TRANSACTION (copyBatch:
// draw ids, COPY, the counters' deltas, COMMIT; Canary the same). Its
// comment says "PostgreSQL ends a slow statement itself first (Busy), so
// only a connection that hangs without an error reaches it"; that holds
// for one statement, not for two that each finish inside the server's
// timeout. Here PostgreSQL answers every statement of the batch, each in
// 2.4 s under a 3 s statement_timeout, but the transaction takes some
// 5 s, past the 4 s deadline: the ingester cancels it, takes
// context.DeadlineExceeded for "PostgreSQL out of reach" (Unreachable, so
// the batch is neither bisected nor its slow record deferred), retries
// the same batch until cutOffAfter, cuts the replica off from a
// PostgreSQL that works, hands the batch back and gets it again: neither
// the slow dead letter nor its batchmates of another tenant are ever
// stored (the test's log: acme 0 of 3, slowco 0 of 1, ten store errors
// in 45 s). A dead letter whose insert is slow, not refused, holds its
// batchmates of every tenant (invariant: a hostile dead letter never stops
// ingest for others). Before round 12 the same batch was stored in 5 s.
func TestRevIngest13SlowTransactionTakenForUnreachable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	cfg := b.db.Pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "3s"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b.store = NewStore(pool)
	b.slowTenantInserts(t, "slowco", 2.4)

	b.publishN(t, 3, -1) // acme: fast
	_, err = b.js.PublishMsg(ctx, &nats.Msg{Subject: "dlq.slowco.analytics.event", Data: []byte(`{"n":"slow"}`), Header: nats.Header{
		HeaderOriginalSubject: {"app.slowco.analytics.event"}, HeaderOriginalMsgID: {"m-slow"},
	}})
	require.NoError(t, err)

	ic := IngestConfig{BatchSize: 100, Workers: 1, MaxWait: 200 * time.Millisecond, AckWait: time.Minute, StatementTimeout: 3 * time.Second}
	require.Equal(t, 4*time.Second, ic.statementDeadline())
	r := b.start(t, ic, nil)
	defer func() {
		t.Logf("stored: acme %d of 3, slowco %d of 1; cut off from PostgreSQL: %v; store errors %v",
			countRows(t, b.db.Pool, "tenant = 'acme'"), countRows(t, b.db.Pool, "tenant = 'slowco'"), r.cutOff.Load(), testutil.ToFloat64(r.metrics.StoreErrors))
	}()

	// Each statement ends inside the server's timeout: PostgreSQL is
	// neither out of reach nor busy, and every dead letter is stored; at
	// the least, the slow one never holds acme's (today: none of the four
	// is stored, the batch goes round for good).
	wait.Until(t, "acme's three stored, whatever slowco's one costs", 45*time.Second, func() bool {
		return countRows(t, b.db.Pool, "tenant = 'acme'") == 3
	})
	wait.Until(t, "all four stored (each statement of their insert answered in 2.4 s, under the 3 s statement_timeout)", 30*time.Second, func() bool {
		return countRows(t, b.db.Pool, "true") == 4
	})
	assert.Equal(t, 1, countRows(t, b.db.Pool, "tenant = 'slowco'"))
	assert.False(t, r.cutOff.Load(), "a PostgreSQL that answers every statement is not out of reach")
	assert.Zero(t, testutil.ToFloat64(r.metrics.Unstorable))
}
