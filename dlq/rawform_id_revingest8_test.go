package dlq

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevIngest8AdvisoryRawFormDerivesIDFromTheAdvisorysTime: the derived
// message id of a dead letter whose original had no Nats-Msg-Id is
// "<stream>:<seq>@<stored time>" of where the original lived, computed once
// and the same whichever form stores it (docs: identity when the producer
// gave none). ParseAdvisory derives it from the original's stored time.
// RawForm (and so the position form) derives it again from storedAt, which
// for an advisory is the ADVISORY stream's stored time (setDelivery(via)),
// paired with the ORIGINAL's stream and sequence: "ORDERS:1@<when the
// advisory was captured>", an id that names no message, differs from the
// parsed form's, and is not found by a search for the original's id.
func TestRevIngest8AdvisoryRawFormDerivesIDFromTheAdvisorysTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// PostgreSQL refuses this dead letter's parsed form only (a check on
	// a parsed column; the raw form leaves original_subject empty).
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_refuses_parsed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.payload = 'rawme'::bytea AND NEW.original_subject <> '' THEN RAISE EXCEPTION 'test refuses the parsed form'; END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_refuses_parsed BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_refuses_parsed();`)
	require.NoError(t, err)
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)

	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("rawme")}) // no Nats-Msg-Id
	orders, err := b.js.Stream(ctx, "ORDERS")
	require.NoError(t, err)
	orig, err := orders.GetMsg(ctx, 1)
	require.NoError(t, err)
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	failingWorker(t, cons, 1, true)
	b.waitRows(t, 1)
	adv, err := b.js.Stream(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	captured, err := adv.GetMsg(ctx, 1)
	require.NoError(t, err)
	require.False(t, captured.Time.Equal(orig.Time), "the advisory is stored after the original")

	d := b.row(t, "source_stream = 'ORDERS' AND source_seq = 1")
	require.Contains(t, d.Flags, "raw_form")
	want := DerivedMsgID("ORDERS", 1, orig.Time)
	assert.Equal(t, want, d.MsgID, "the original's derived id (where and when the original lived), as the parsed form has it")
}
