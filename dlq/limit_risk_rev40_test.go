package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev40LargeBacklogBehindSmallStoredDeadLettersNearsTheSizeLimit: the
// size risk priced each dead letter not yet stored at the stream's mean
// message size. A stream full of small dead letters already stored, then
// a few large ones waiting (PostgreSQL down), read next to nothing while
// the large ones took half the limit: DeadLetterStreamNearLimit stayed
// quiet until JetStream discarded them. The check now reads a few of the
// waiting ones for their size.
func TestRev40LargeBacklogBehindSmallStoredDeadLettersNearsTheSizeLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const limit = 16 << 20 // twice the test server's max_payload, the least allowed
	in, _ := b.idle(t, IngestConfig{StreamMaxBytes: limit})
	small := []byte(strings.Repeat("s", 1000))
	const stored = 1500
	for range stored {
		_, err := b.js.PublishAsync("dlq.acme.orders.created", small)
		require.NoError(t, err)
	}
	select {
	case <-b.js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("the small dead letters were not all acknowledged")
	}
	cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	for taken := 0; taken < stored; {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(10*time.Second))
		require.NoError(t, err)
		for m := range batch.Messages() {
			require.NoError(t, m.Ack()) // stored, as far as the stream knows
			taken++
		}
		require.NoError(t, batch.Error())
	}
	large := []byte(strings.Repeat("L", 2<<20))
	const waiting = 5
	for range waiting {
		_, err := b.js.Publish(ctx, "dlq.acme.orders.created", large)
		require.NoError(t, err)
	}
	var h StreamHealth
	for range 100 { // until the acks of the small ones are the consumer's floor
		in.check(ctx, "DLQ")
		h = in.metrics.health.get("DLQ")
		if h.AckFloor == stored {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.EqualValues(t, stored, h.AckFloor)
	require.EqualValues(t, waiting, h.Waiting())
	truth := float64(waiting*len(large)) / limit
	_, risk := h.LimitRisk(time.Now())
	assert.Greater(t, truth, LimitWarnAt, "the large ones take more than half the limit")
	assert.InDelta(t, truth, risk, 0.02, "the risk the large ones put the stream at (%f)", risk)
	assert.NotEmpty(t, in.Health().LimitWarnings(time.Now()), "the dashboard warns")
}
