package dlq

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRetiredAdvisoryKeepsItsOriginal: an
// advisory of a retired incarnation whose original could not be read at
// that moment is left to the consumer made again (the advisory stream
// kept): it delivers the advisory again (DeliverAll), the original is
// readable then, and the dead letter carries it. Before, the first was
// stored at once without its original, and the redelivery was
// deduplicated by the source key: the payload was lost for good.
func TestRetiredAdvisoryKeepsItsOriginal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.created", Data: []byte("the refund order")})

	adv := []byte(`{"type":"io.nats.jetstream.advisory.v1.terminated","stream":"ORDERS","consumer":"refunder","stream_seq":1,"deliveries":2}`)
	reply := fmt.Sprintf("$JS.ACK.DLQ_ADVISORIES.quarantine-ingest.1.7.7.%d.0", time.Now().UnixNano()) // the same stream message both times
	msg := func(inc *incarnation) pulledMsg {
		sub, err := b.nc.SubscribeSync(nats.NewInbox())
		require.NoError(t, err)
		return pulledMsg{inc: inc, received: time.Now(), m: &nats.Msg{Sub: sub,
			Subject: AdvisoryTerminated + ".ORDERS.refunder",
			Reply:   reply,
			Data:    adv,
		}}
	}
	quietLog := slog.New(slog.NewTextHandler(io.Discard, nil))

	// The old incarnation, retired (the consumer was made again), its
	// read of the original failing at that moment (connection closed).
	nc, closedJS := b.ns.Connect(t)
	nc.Close()
	old := &incarnation{stream: "DLQ_ADVISORIES"}
	old.retire()
	a := NewIngester(IngestConfig{Watch: ws}, closedJS, b.store, NewMetrics(prometheus.NewRegistry()), quietLog)
	items := make(chan item, 1)
	a.handleAdvisory(ctx, msg(old), items)
	require.Empty(t, items, "not stored now: the consumer made again delivers it again")

	// The consumer made again delivers the same advisory; the original
	// is readable now.
	in := NewIngester(IngestConfig{Watch: ws}, b.js, b.store, NewMetrics(prometheus.NewRegistry()), quietLog)
	in.handleAdvisory(ctx, msg(&incarnation{stream: "DLQ_ADVISORIES"}), items)
	require.Len(t, items, 1)
	in.flush(ctx, []item{<-items})

	assert.Equal(t, 1, countRows(t, b.db.Pool, "source_stream = 'ORDERS' AND source_seq = 1 AND source_consumer = 'refunder'"),
		"one advisory, one dead letter")
	d, err := b.store.BySource(ctx, "ORDERS", 1, "refunder")
	require.NoError(t, err)
	assert.NotContains(t, d.Flags, "original_unreadable", "the redelivery could read the original; the dead letter should carry it")
	assert.Equal(t, "the refund order", string(d.Payload))
}
