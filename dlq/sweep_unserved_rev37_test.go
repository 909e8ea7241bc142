package dlq

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev37UnservedWatchedStreamHoldsOnlyItsAdvisories: two give-ups of
// two watched streams were acked on the advisory stream without a row (a
// peek), ORDERS's first. JetStream then serves no reads of ORDERS (no
// responders, as for a stream without a leader). The sweep reads each
// advisory from the advisory stream, which answers: ORDERS's is held as
// its own (its original could not be read), and EMAILS's, after it, is
// stored at the first sweep. ORDERS's is stored too once it has been held
// as many sweeps as a delivery waits NATS out, flagged
// original_unreadable. Before, every sweep stopped at ORDERS's advisory,
// and EMAILS's waited for ORDERS to be served again, with no bound.
func TestRev37UnservedWatchedStreamHoldsOnlyItsAdvisories(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.>"}})
	ws, err := ParseWatchStreams("ORDERS,EMAILS:mail.{tenant}.{item_type}")
	require.NoError(t, err)
	in, _ := b.idle(t, IngestConfig{Watch: ws})
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("order")})
	publish(t, b.js, &nats.Msg{Subject: "mail.globex.welcome", Data: []byte("mail")})
	for _, s := range []string{"ORDERS", "EMAILS"} {
		adv := `{"type":"io.nats.jetstream.advisory.v1.terminated","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
			`","stream":"` + s + `","consumer":"c1","stream_seq":` + strconv.Itoa(1) + `,"deliveries":2}`
		publish(t, b.js, &nats.Msg{Subject: AdvisoryTerminated + "." + s + ".c1", Data: []byte(adv)})
	}
	b.peek(t, "DLQ_ADVISORIES", 2)
	require.NoError(t, b.ns.GlobalAccount().AddMapping("$JS.API.STREAM.MSG.GET.ORDERS", "test.nobody.answers"))
	require.NoError(t, b.ns.GlobalAccount().AddMapping("$JS.API.DIRECT.GET.ORDERS", "test.nobody.answers"))

	_, err = in.sweep(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err, "an advisory whose original's stream does not answer is held, not the step's failure")
	assert.Equal(t, 1, countRows(t, b.db.Pool, "source_stream = 'EMAILS'"), "EMAILS's give-up, readable all along, stored at the first sweep")
	assert.Zero(t, countRows(t, b.db.Pool, "source_stream = 'ORDERS'"), "ORDERS's held")

	for range maxHeaderRereads + maxWideDeliveries {
		_, err = in.sweep(ctx, "DLQ_ADVISORIES")
		require.NoError(t, err)
	}
	assert.Equal(t, 1, countRows(t, b.db.Pool, "source_stream = 'ORDERS' AND 'original_unreadable' = ANY(flags)"),
		"ORDERS's give-up stored flagged once held as long as a delivery waits NATS out")
	assert.Equal(t, 2, countRows(t, b.db.Pool, "true"))
}
