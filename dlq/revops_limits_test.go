package dlq

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
)

// TestRestartedReplicaDoesNotShrinkTheDLQStream (review rev-ops): the
// runbook (DeadLetterStreamNearLimit, step 2) says to buy time by raising
// the DLQ stream's limit with `nats stream edit DLQ --max-bytes ...`, or by
// raising DLQ_MAX_BYTES and restarting one console. Every other replica
// still has the old DLQ_MAX_BYTES; the next time one of them sets ingest
// up (a restart, a crash, or Run's `again` after the consumer was made
// again, as the failover runbook does) ensureStream puts its smaller limit
// back, and JetStream discards the oldest dead letters at once, stored or
// not: the backlog the raise was to save is lost.
func TestRestartedReplicaDoesNotShrinkTheDLQStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A server taking messages of 64 KiB at most: a DLQ_MAX_BYTES of
	// 256 KiB is above the least it allows (twice that, CheckStreamMaxBytes).
	_, js := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 64 << 10 }).Connect(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	replica := func() *Ingester {
		return NewIngester(IngestConfig{StreamMaxBytes: 256 << 10}, js, nil, NewMetrics(prometheus.NewRegistry()), log) // DLQ_MAX_BYTES=256KiB
	}
	require.NoError(t, replica().Setup(ctx))

	// Ingest is behind; on-call raises the limit as the runbook says.
	s, err := js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.MaxBytes = 64 << 20
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	payload := bytes.Repeat([]byte("x"), 1024)
	const n = 1000 // about 1 MB of dead letters, none stored yet
	for range n {
		_, err := js.Publish(ctx, "dlq.acme.orders.created", payload)
		require.NoError(t, err)
	}

	// Another replica, with the DLQ_MAX_BYTES it was deployed with, restarts.
	require.NoError(t, replica().Setup(ctx))
	info, err := js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(n), info.CachedInfo().State.Msgs, "dead letters not yet stored were discarded by a replica's setup")
	assert.Equal(t, int64(64<<20), info.CachedInfo().Config.MaxBytes)
}
