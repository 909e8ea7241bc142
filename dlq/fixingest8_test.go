package dlq

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixIngest8ProbeStoredRawCountedOnce: the smallest record of a batch
// busy busyAttempts times, which PostgreSQL refuses in its parsed form, is
// stored in its raw form by the probe. It is counted once: stored
// (quarantine_ingested_total, quarantine_malformed_total) and in raw form
// (quarantine_ingest_raw_form_total), though the bisection finds it stored
// and refuses its parsed form again.
func TestFixIngest8ProbeStoredRawCountedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_corrupt_toast() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF octet_length(NEW.payload) > 2000 THEN
                RAISE EXCEPTION 'invalid page in block 7 of relation base/16384/2619_toast' USING ERRCODE = 'XX001';
            END IF;
            IF NEW.payload = 'small'::bytea AND NOT 'raw_form' = ANY(NEW.flags) THEN
                RAISE EXCEPTION 'test refuses the parsed form';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_corrupt_toast BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_corrupt_toast();`)
	require.NoError(t, err)
	cfg := IngestConfig{Workers: 1, MaxWait: 200 * time.Millisecond, RetryUnstorable: time.Minute}
	b.start(t, cfg, nil).stop() // makes the stream; both dead letters then come in one batch

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: bytes.Repeat([]byte("x"), 3000)})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("small")})
	r := b.start(t, cfg, nil)

	wait.Until(t, "the small one acked, the large one deferred", time.Minute, func() bool {
		return countRows(t, b.db.Pool, "true") == 1 && b.consumerInfo(t).NumAckPending == 1 && sumCounterVec(t, r.metrics.Deferred) >= 1
	})
	require.Contains(t, b.row(t, "true").Flags, "raw_form")
	assert.Equal(t, 1.0, sumCounterVec(t, r.metrics.Ingested), "stored once, counted once")
	assert.Equal(t, 1.0, sumCounterVec(t, r.metrics.Malformed))
	assert.Equal(t, 1.0, sumCounterVec(t, r.metrics.RawForm), "in raw form once, though the bisection refused its parsed form again")
}
