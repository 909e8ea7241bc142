package dlq

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevIngest14AdvisoryRawFormKeepsTheGiveUp: a captured give-up whose
// parsed form PostgreSQL refuses is stored in its raw form, which "keeps
// every byte received" (RawForm) and the error context: for a DLQ
// message the producer's Dlq-Error, Dlq-Attempts and Dlq-Consumer are in
// its header block, which the raw form keeps. An advisory's dead letter
// has its error context in the advisory (which consumer gave up, after how
// many deliveries, the reason it was terminated with); the raw form keeps
// the original's header block and payload, and drops the advisory: its
// JSON (advisory column), its error and its attempts (its consumer stays
// in source_consumer). The row says only "stored in raw form",
// unclassified: why the message was given up on ("terminated ... :
// <reason>") is in no column (the advisory stream holds it for 30 days).
func TestRevIngest14AdvisoryRawFormKeepsTheGiveUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// PostgreSQL refuses this dead letter's parsed form only (as in
	// TestRevIngest8AdvisoryRawFormDerivesIDFromTheAdvisorysTime).
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_refuses_parsed14() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.payload = 'rawme14'::bytea AND NEW.original_subject <> '' THEN RAISE EXCEPTION 'test refuses the parsed form'; END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_refuses_parsed14 BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_refuses_parsed14();`)
	require.NoError(t, err)
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)

	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("rawme14")})
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	failingWorker(t, cons, 1, true) // TermWithReason("schema: field amount missing")
	b.waitRows(t, 1)

	d := b.row(t, "source_stream = 'ORDERS' AND source_seq = 1")
	require.Contains(t, d.Flags, "raw_form")
	var kept int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters
        WHERE source_stream = 'ORDERS' AND source_seq = 1
          AND (error LIKE '%field amount missing%' OR coalesce(advisory::text, '') LIKE '%field amount missing%')`).Scan(&kept))
	assert.Equal(t, 1, kept, "the reason the consumer terminated the message with is kept (error or advisory): error %q", d.Error)
	assert.Contains(t, []string{d.Consumer, d.SourceConsumer}, "refunder", "the consumer that gave up is kept")
	assert.NotNil(t, d.Attempts, "the deliveries the advisory counts are kept")
}
