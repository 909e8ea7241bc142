package dlq

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// failInsertOf makes every insert into dead_letters of a row whose payload
// is payload fail with SQLSTATE code (a trigger named name): a failure the
// ingester classes as not the data's, met by that one record alone.
func (b *bundle) failInsertOf(t *testing.T, name, payload, code, message string) {
	t.Helper()
	_, err := b.db.OwnerPool.Exec(context.Background(), fmt.Sprintf(`
        CREATE FUNCTION %[1]s() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.payload = %[2]s::bytea THEN
                RAISE EXCEPTION '%[4]s' USING ERRCODE = '%[3]s';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER %[1]s BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION %[1]s();`,
		name, "'"+payload+"'", code, message))
	require.NoError(t, err)
}

// TestRevIngest10SmallestBusyRecordStallsItsBatch: storeBatch, after
// busyAttempts failures of the batch for a reason not its data (Busy),
// stores the batch's SMALLEST record alone (probe) and takes a failure of
// that one insert as "PostgreSQL is busy for everyone": it never bisects,
// and retries the whole batch (probing the same smallest record again) for
// ever. When the record that fails alone is the smallest of its batch (a
// damaged index page only its key reaches, XX002; a row lock an
// uncommitted insert of its source key holds, 57014 after the statement
// timeout), none of its batchmates is ever stored or acked: one dead letter
// stalls the others for good (invariant 10), and the only signal is the
// critical "PostgreSQL down?" alert. Two healthy dead letters should be
// stored and the small one deferred, as when any other record of the batch
// is the culprit.
func TestRevIngest10SmallestBusyRecordStallsItsBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.failInsertOf(t, "test_damaged_index_page", "tiny", "XX002", "index \"dead_letters_source_key\" contains unexpected zero page at block 41")
	cfg := IngestConfig{Workers: 1, MaxWait: 200 * time.Millisecond, RetryUnstorable: time.Minute}
	b.start(t, cfg, nil).stop() // makes the stream; the three dead letters then come in one batch

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: bytes.Repeat([]byte("a"), 300)})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("tiny")})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: bytes.Repeat([]byte("b"), 300)})
	r := b.start(t, cfg, nil)

	// The batch fails busy before it is narrowed down (a store error
	// each, up to the third attempt). Before the fix every attempt after
	// the third probed "tiny" alone and gave up on bisecting; fixed, the
	// batch is narrowed down at the third and "tiny" deferred for
	// RetryUnstorable (a minute), so no more store errors come meanwhile.
	wait.Until(t, "the batch failed busy", time.Minute, func() bool {
		return sumCounterVec(t, r.metrics.StoreErrors) >= busyAttempts-1
	})
	wait.Until(t, "the two healthy dead letters stored though the small one fails alone", 30*time.Second, func() bool {
		return countRows(t, b.db.Pool, "payload <> 'tiny'::bytea") == 2
	})
}
