package dlq

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixOps11LoweredConsumerSettingsAreSaid: the ingest consumer's ack
// wait and max_ack_pending are only raised (replicas with other values
// settle on the higher), so a console whose INGEST_ACK_WAIT or
// INGEST_BATCH_SIZE is lower says at setup, on the DLQ's consumer and the
// advisory stream's, that it is not applied, with the `nats consumer edit`
// that applies it, in the words DLQ_MAX_* use; the consumer keeps the
// higher value; a console with the consumer's values says nothing.
func TestFixOps11LoweredConsumerSettingsAreSaid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	js, watch := watchingOrders(t, "ORDERS")
	setupWith := func(ackWait time.Duration, batch int) []string {
		t.Helper()
		var logs revOps11Buffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		in := NewIngester(IngestConfig{AckWait: ackWait, BatchSize: batch, Watch: watch}, js, nil, NewMetrics(prometheus.NewRegistry()), log)
		require.NoError(t, in.Setup(ctx))
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if strings.Contains(l, "not applied") {
				lines = append(lines, l)
			}
		}
		return lines
	}
	require.Empty(t, setupWith(time.Hour, 100), "the first console makes the consumers")
	assert.Empty(t, setupWith(time.Hour, 100), "a console with the consumers' values")

	lines := setupWith(time.Minute, 10)
	require.Len(t, lines, 4, "ack wait and max_ack_pending, on DLQ and DLQ_ADVISORIES: %q", lines)
	for i, stream := range []string{"DLQ", "DLQ_ADVISORIES"} {
		wait, pending := lines[2*i], lines[2*i+1]
		assert.Contains(t, wait, "INGEST_ACK_WAIT not applied: it is below the ingest consumer's ack_wait, and a console never lowers one")
		assert.Contains(t, wait, "once every console runs it: nats consumer edit "+stream+" quarantine-ingest --wait 60s")
		assert.Contains(t, wait, "ack_wait=1m0s consumer_ack_wait=1h0m0s")
		assert.Contains(t, pending, "max_ack_pending (20 × INGEST_BATCH_SIZE) not applied")
		assert.Contains(t, pending, "nats consumer edit "+stream+" quarantine-ingest --max-pending 200")
		assert.Contains(t, pending, "max_ack_pending=200 consumer_max_ack_pending=2000")
		cons, err := js.Consumer(ctx, stream, "quarantine-ingest")
		require.NoError(t, err)
		assert.Equal(t, time.Hour, cons.CachedInfo().Config.AckWait, "kept")
		assert.Equal(t, 2000, cons.CachedInfo().Config.MaxAckPending, "kept")
	}
}
