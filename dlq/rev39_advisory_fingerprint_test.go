package dlq

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev39AdvisoriesOfOtherConsumersAreOtherGroups (review 39): an
// advisory's error quotes the consumer's name, and NormaliseMessage turns
// a quoted value into <q>, so every consumer and stream that gave up on a
// message shared one group, whose Discard, Resolve and Replay selected
// them all. The stream and consumer take part in the fingerprint now;
// the delivery count still does not.
func TestRev39AdvisoriesOfOtherConsumersAreOtherGroups(t *testing.T) {
	t.Parallel()
	ws, err := ParseWatchStreams("ORDERS,STOCK")
	require.NoError(t, err)
	via := Received{Subject: AdvisoryMaxDeliveries + ".ORDERS.c", Stream: "DLQ_ADVISORIES", Seq: 3, Time: t0}
	parse := func(typ, stream, consumer string, deliveries uint64) Record {
		w := ws[0]
		if stream == "STOCK" {
			w = ws[1]
		}
		adv := Advisory{Type: typ, Timestamp: t0, Stream: stream, Consumer: consumer, StreamSeq: 9, Deliveries: deliveries}
		return ParseAdvisory(w, adv, &Original{Subject: "app.acme.orders.refund", Data: []byte("{}")}, []byte(`{}`), via)
	}
	const maxDeliver = "io.nats.jetstream.advisory.v1.max_deliver"
	const terminated = "io.nats.jetstream.advisory.v1.terminated"

	charger := parse(maxDeliver, "ORDERS", "billing-charger", 5)
	require.Equal(t, ClassMaxDeliveries, charger.ErrorClass)
	assert.Equal(t, `consumer "billing-charger" reached its MaxDeliver after 5 deliveries without an ack`, charger.Error, "the text people read is as it was")
	assert.Empty(t, charger.Stack, "no stack is made up for the record")
	assert.NotEqual(t, charger.Fingerprint, parse(maxDeliver, "ORDERS", "inventory-reserver", 5).Fingerprint, "another consumer")
	assert.NotEqual(t, charger.Fingerprint, parse(maxDeliver, "STOCK", "billing-charger", 5).Fingerprint, "another stream")
	assert.Equal(t, charger.Fingerprint, parse(maxDeliver, "ORDERS", "billing-charger", 7).Fingerprint, "another delivery count, one group")
	assert.NotEqual(t, parse(terminated, "ORDERS", "billing-charger", 2).Fingerprint, parse(terminated, "ORDERS", "inventory-reserver", 2).Fingerprint, "terminations too")

	// A name of any length is cut before it is fingerprinted; names that
	// differ within the cut still split.
	long := strings.Repeat("a", 1<<20)
	assert.NotEqual(t, parse(maxDeliver, "ORDERS", long+"x", 5).Fingerprint, parse(maxDeliver, "ORDERS", "b"+long, 5).Fingerprint)
}
