package dlq

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixIngest14AdvisoryRawFormRefusedWithItsGiveUpIsStoredWithout: an
// advisory's raw form keeps the give-up (class, deliveries, the
// termination sentence, the advisory's JSON); when PostgreSQL refuses
// that too, the raw form without it is stored: nothing is lost, and the
// message is not held unstored for what the console added.
func TestFixIngest14AdvisoryRawFormRefusedWithItsGiveUpIsStoredWithout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_refuses_giveup14() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.payload = 'rawme14b'::bytea AND (NEW.original_subject <> '' OR NEW.advisory IS NOT NULL) THEN
                RAISE EXCEPTION 'test refuses the parsed form and the give-up';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_refuses_giveup14 BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_refuses_giveup14();`)
	require.NoError(t, err)
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)

	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("rawme14b")})
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	failingWorker(t, cons, 1, true)
	b.waitRows(t, 1)

	d := b.row(t, "source_stream = 'ORDERS' AND source_seq = 1")
	assert.Contains(t, d.Flags, "raw_form")
	assert.Nil(t, d.Advisory, "the bare raw form")
	assert.Equal(t, ClassUnclassified, d.ErrorClass)
	assert.Equal(t, "rawme14b", string(d.Payload), "its payload kept")
}

// TestFixIngest14RawFormKeepsOnlyAnAdvisorysGiveUp: RawForm keeps an
// advisory's give-up (cleaned and cut), and nothing of the kind for a DLQ
// message, whose error is producer text (its header block keeps it).
func TestFixIngest14RawFormKeepsOnlyAnAdvisorysGiveUp(t *testing.T) {
	t.Parallel()
	three := int32(3)
	adv := Record{Tenant: "acme", ItemType: "refund", SourceKind: SourceAdvisory, SourceStream: "ORDERS", SourceConsumer: "refunder",
		ErrorClass: ClassTerminated, Attempts: &three, Advisory: []byte(`{"reason":"x"}`),
		Error: "terminated by consumer refunder after 3 deliveries: " + string(make([]byte, 2000))}
	m := RawForm(adv, assert.AnError)
	assert.Equal(t, ClassTerminated, m.ErrorClass)
	assert.Equal(t, &three, m.Attempts)
	assert.Equal(t, "refunder", m.Consumer)
	assert.JSONEq(t, `{"reason":"x"}`, string(m.Advisory))
	assert.NotContains(t, m.Error, "\x00", "cleaned")
	assert.LessOrEqual(t, len(m.Error), 2*rawFormReasonLen+2, "cut")
	assert.Contains(t, m.Error, "stored in raw form")

	dlqMsg := Record{Tenant: "acme", ItemType: "refund", SourceKind: SourceDLQ, ErrorClass: ClassTerminated, Attempts: &three,
		Error: "producer text"}
	m = RawForm(dlqMsg, assert.AnError)
	assert.Equal(t, ClassUnclassified, m.ErrorClass)
	assert.Nil(t, m.Attempts)
	assert.NotContains(t, m.Error, "producer text")
}
