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

// TestRevIngest10LostRaceInBisectionIsAStoreError: storeBatch counts a
// lost lock race (LostRace) in quarantine_ingest_store_conflicts_total
// "and nowhere else" (docs/architecture.md, the runbook, the alert rules),
// but only when the whole batch's insert loses it. Once a busy batch is
// narrowed down (probe, bisect), bisect takes a lost race as PostgreSQL
// out of reach (!Busy: "return false"), and storeBatch then counts it as a
// store error (the critical DeadLetterIngestStoreErrors, "PostgreSQL
// down?") and logs it as a failure, waiting out the store backoff instead
// of retrying at once. Here the record that makes its batch busy three
// times (XX001) loses a race (40P01) in the bisection that follows: the
// store errors should stay the two busy attempts before the third, and
// every lost race be a conflict.
func TestRevIngest10LostRaceInBisectionIsAStoreError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := string(bytes.Repeat([]byte("P"), 600))
	_, err := b.db.OwnerPool.Exec(context.Background(), `
        CREATE SEQUENCE test_bisect_calls;
        CREATE FUNCTION test_bisect_race() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.payload = '`+big+`'::bytea THEN
                IF nextval('test_bisect_calls') <= 3 THEN
                    RAISE EXCEPTION 'invalid page in block 7 of relation base/16384/2619_toast' USING ERRCODE = 'XX001';
                END IF;
                RAISE EXCEPTION 'deadlock detected' USING ERRCODE = '40P01';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_bisect_race BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_bisect_race();`)
	require.NoError(t, err)
	cfg := IngestConfig{Workers: 1, MaxWait: 200 * time.Millisecond, RetryUnstorable: time.Minute}
	b.start(t, cfg, nil).stop() // makes the stream; the three dead letters then come in one batch

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("one")})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(big)})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("two")})
	r := b.start(t, cfg, nil)

	// Three busy attempts, the probe, the bisection's lost race, and then
	// a few lost races of the whole batch.
	wait.Until(t, "the batch busy three times and then losing races", time.Minute, func() bool {
		var calls int64
		require.NoError(t, b.db.OwnerPool.QueryRow(context.Background(), `SELECT last_value FROM test_bisect_calls`).Scan(&calls))
		return calls >= 7 && sumCounterVec(t, r.metrics.StoreConflicts) >= 2
	})
	assert.Equal(t, 2.0, sumCounterVec(t, r.metrics.StoreErrors),
		"only the two busy attempts before the third are store errors; the race the bisection lost is a conflict")
}
