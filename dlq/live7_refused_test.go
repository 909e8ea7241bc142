package dlq

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestLiveIngestStoresRefusedDeadLetterAsPositionForm: a dead letter
// PostgreSQL refuses in its parsed and its raw form (a trigger refuses its
// payload), between two it takes. The two are stored and acked at once;
// the refused one is nak'd and comes again, and at its
// maxRefusedDeliveries-th delivery its position form is stored (flagged
// content_refused, its payload's SHA-256, no payload, never replayed,
// under the source key its delivery has, so a sweep finds it stored) and
// it is acked: the ack floor passes it. Before, it was nak'd for good:
// never stored, never flagged, the ack floor behind it.
func TestLiveIngestStoresRefusedDeadLetterAsPositionForm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	refuseHostile(t, b)
	r := b.start(t, IngestConfig{Workers: 1, MaxWait: 10 * time.Millisecond, RetryUnstorable: 100 * time.Millisecond}, nil)

	for _, p := range []string{"before", "hostile", "after"} {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(p)})
	}
	wait.Until(t, "the refused one stored in its position form", time.Minute, func() bool {
		return countRows(t, b.db.Pool, "'content_refused' = ANY(flags)") == 1
	})
	b.waitDrained(t)
	assert.Equal(t, uint64(3), b.consumerInfo(t).AckFloor.Stream, "acked: the ack floor past it")
	assert.Equal(t, 3, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, 2, countRows(t, b.db.Pool, "payload IN ('before', 'after') AND NOT 'content_refused' = ANY(flags)"), "the others stored as they are")
	assert.Equal(t, float64(maxRefusedDeliveries), testutil.ToFloat64(r.metrics.Unstorable),
		"refused on each of its %d deliveries, then stored", maxRefusedDeliveries)

	d := b.row(t, "source_seq = 2")
	sum := sha256.Sum256([]byte("hostile"))
	assert.Equal(t, "acme", d.Tenant)
	assert.Equal(t, "search.index_update", d.ItemType)
	assert.Equal(t, "dlq.acme.search.index_update", d.Subject)
	assert.Empty(t, d.Payload, "not the content PostgreSQL refuses")
	assert.True(t, d.PayloadUnavailable, "never replayed")
	assert.Equal(t, sum[:], d.PayloadSHA256, "the payload's hash kept, to tell it from the message read by hand")
	assert.Empty(t, d.OriginalSubject)
	assert.Equal(t, []string{"content_refused"}, d.Flags)
	require.Len(t, d.MalformedReasons, 1)
	assert.Contains(t, d.MalformedReasons[0], "test refuses hostile")
	assert.Contains(t, d.MalformedReasons[0], "nats stream get DLQ 2")
	assert.True(t, strings.HasPrefix(d.Delivery, "DLQ #2 stored "), "under the key its delivery has: %s", d.Delivery)

	// The key is the one the sweep makes of the stream's copy: it finds
	// the dead letter stored, and stores nothing twice.
	st, err := readStored(ctx, b.js, "DLQ", 2, false)
	require.NoError(t, err)
	swept, later := r.sweptRecord(ctx, "DLQ", st)
	require.NoError(t, later)
	var key []byte
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT source_key FROM dead_letters WHERE source_seq = 2`).Scan(&key))
	assert.Equal(t, swept.SourceKey[:], key, "the source key the sweep computes")
	res, err := r.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Zero(t, res.Missing, "the sweep finds every one stored")
	assert.Equal(t, 3, countRows(t, b.db.Pool, "true"))
}

// TestLiveIngestKeepsNakingWhatPostgresRefusesWhole: PostgreSQL refuses
// every row (a trigger; a broken grant or constraint does the same), so
// the position form too: the dead letter is not stored nor acked however
// many deliveries go by, and once PostgreSQL takes rows again its next
// delivery stores it whole, not in its position form. (The ingester is
// stopped while the trigger goes: a delivery under way when it went would
// store the position form, its parsed form having been refused.)
func TestLiveIngestKeepsNakingWhatPostgresRefusesWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_refuses_all() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'test refuses every row'; END $$;
        CREATE TRIGGER test_refuses_all BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_refuses_all();`)
	require.NoError(t, err)
	r := b.start(t, IngestConfig{Workers: 1, MaxWait: 10 * time.Millisecond, RetryUnstorable: 100 * time.Millisecond}, nil)

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("ok")})
	wait.Until(t, "refused past the deliveries its position form waits for", time.Minute, func() bool {
		return testutil.ToFloat64(r.metrics.Unstorable) >= 2*maxRefusedDeliveries
	})
	assert.Zero(t, countRows(t, b.db.Pool, "true"))
	info := b.consumerInfo(t)
	assert.Equal(t, uint64(0), info.AckFloor.Stream, "not acked")
	assert.Equal(t, 1, info.NumAckPending, "nak'd: it comes again")

	// PostgreSQL takes rows again while no ingester holds the dead letter:
	// dropped in the middle of a delivery, after its parsed form was
	// refused, that delivery would rightly store its position form.
	r.stop()
	b.dropTrigger(t, "test_refuses_all")
	b.start(t, IngestConfig{Workers: 1, MaxWait: 10 * time.Millisecond, RetryUnstorable: 100 * time.Millisecond}, nil)
	b.waitRows(t, 1)
	b.waitDrained(t)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'ok' AND NOT 'content_refused' = ANY(flags)"), "stored whole")
}

// TestLiveIngestRefusedDeadLettersFillingAckPendingDoNotStallIt: as many
// dead letters PostgreSQL refuses for their content as the consumer's
// MaxAckPending (20·BatchSize) fill it: nak'd to come again, each keeps
// its place, and JetStream delivers nothing new. Redeliveries still come,
// and each one's position form is stored at its maxRefusedDeliveries-th,
// which frees its place: the dead letter behind them is stored. Before,
// the consumer stalled for good.
func TestLiveIngestRefusedDeadLettersFillingAckPendingDoNotStallIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	refuseHostile(t, b)
	b.start(t, IngestConfig{BatchSize: 1, Workers: 1, MaxWait: 10 * time.Millisecond, RetryUnstorable: 100 * time.Millisecond}, nil)
	maxAckPending := b.consumerInfo(t).Config.MaxAckPending
	require.Equal(t, 20, maxAckPending)

	for range maxAckPending {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("hostile")})
	}
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("behind")})
	b.waitRows(t, maxAckPending+1)
	b.waitDrained(t)
	assert.Equal(t, maxAckPending, countRows(t, b.db.Pool, "'content_refused' = ANY(flags)"))
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'behind'"))
}
