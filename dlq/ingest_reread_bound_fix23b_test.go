package dlq

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestHeadersOnlyLookalikeUnreadStoredAtItsLastDelivery: a dead letter
// that may have come without its payload (none, and a Nats-Msg-Size)
// whose whole read keeps failing is not nak'd forever: at its
// maxHeaderRereads-th delivery it is stored as delivered, flagged
// payload_unverified with the last read's error, its payload unavailable.
// Here the read keeps failing as JetStream refuses every consumer past the
// DLQ stream's one (max consumers 1, the ingest consumer), and the JSON
// API is not asked: the delivery states 9 MiB, and the stream holds more
// than 8 MiB in all (a dead letter of 9 MiB), so the answer there could
// cut the console's connection.
func TestHeadersOnlyLookalikeUnreadStoredAtItsLastDelivery(t *testing.T) {
	t.Parallel()
	b := bigPayloadBundle(t)
	ctx := context.Background()
	b.createStream(t, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}, MaxConsumers: 1})
	b.start(t, IngestConfig{}, nil)

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders", Data: bytes.Repeat([]byte("x"), 9<<20)})
	stated := strconv.Itoa(9 << 20)
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders", Header: nats.Header{"Nats-Msg-Size": {stated}, HeaderError: {"boom"}}})

	var d DeadLetter
	wait.Until(t, "the dead letter stored", time.Minute, func() bool {
		var err error
		d, err = b.store.BySource(ctx, "DLQ", 2, "")
		return err == nil
	})
	assert.Contains(t, d.Flags, "payload_unverified", "reasons %q", d.MalformedReasons)
	assert.True(t, d.PayloadUnavailable, "an empty payload stored for one that may lack it is never replayed")
	assert.Empty(t, d.Payload)
	reason := strings.Join(d.MalformedReasons, "; ")
	assert.Contains(t, reason, "not read whole in "+strconv.Itoa(maxHeaderRereads)+" deliveries", "the bound, as JetStream counted the deliveries")
	assert.Contains(t, reason, "maximum consumers limit reached", "which read failed and why")
	assert.Contains(t, reason, "not read through JetStream's JSON API instead", "and why the JSON API was not asked")

	cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	info, err := cons.Info(ctx)
	require.NoError(t, err)
	assert.Zero(t, info.NumAckPending+int(info.NumPending), "nothing left on the ingest consumer: %+v", info)
}
