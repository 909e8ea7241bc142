package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestStoppedReplicaHandsBackWhatItHeld (review rev-ops): a replica that
// stops (SIGTERM of a rolling deploy) neither stores nor nak's the dead
// letters it pulled and had not stored yet (the puller's prefetch of
// 2×INGEST_BATCH_SIZE, the batches being filled): Run returns and they
// wait out INGEST_ACK_WAIT (1m by default, up to 1h) before the consumer
// gives them to another replica. Every restart of every replica adds that
// gap; nothing is lost, but a dead letter that could be stored at once
// waits a minute per restart, and with a long ack wait DeadLetterIngestBehind
// fires during an ordinary deploy.
func TestStoppedReplicaHandsBackWhatItHeld(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	cfg := IngestConfig{AckWait: 45 * time.Second, BatchSize: 10, Workers: 1}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	stopping := NewIngester(cfg, b.js, b.store, NewMetrics(prometheus.NewRegistry()), log)
	committed, release := make(chan struct{}, 1), make(chan struct{})
	stopping.afterCommit = func(int) bool { // the first batch commits; the writer is then busy until the stop
		select {
		case committed <- struct{}{}:
		default:
		}
		<-release
		return true
	}
	require.NoError(t, stopping.Setup(ctx))
	const n = 100
	for range n {
		_, err := b.js.Publish(ctx, "dlq.acme.orders.created", []byte(`{}`))
		require.NoError(t, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- stopping.Run(sctx) }()
	<-committed
	cancel() // SIGTERM
	close(release)
	require.NoError(t, <-done)

	b.start(t, cfg, nil) // the replica that stays
	wait.Until(t, "the other replica stores what the stopped one held, well before INGEST_ACK_WAIT", 15*time.Second, func() bool {
		return countRows(t, b.db.Pool, "true") == n
	})
}
