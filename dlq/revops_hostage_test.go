package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestReplicaCutOffFromPostgresLetsOthersStore (review rev-ops): two
// replicas share the ingest consumer; one loses PostgreSQL (a network
// partition, a node whose route to the database broke) while it still
// reaches NATS. Its storeBatch retries forever and marks its messages
// InProgress at every attempt (ingest_store.go:57; the backoff is capped
// at 5s, the ack wait is 1m by default, 10s here), so their ack wait never
// runs out: the dead letters it took wait for as long as it stays cut off,
// while the other replica, which reaches PostgreSQL, could store them.
// /readyz takes it out of the load balancer but nothing stops its ingest;
// /healthz stays 200. The runbook (DeadLetterIngestStoreErrors) says only
// that they are stored "when PostgreSQL answers again".
func TestReplicaCutOffFromPostgresLetsOthersStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	cfg := IngestConfig{AckWait: 10 * time.Second, BatchSize: 10, Workers: 1}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	dead, err := pgxpool.New(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(dead.Close)
	cutOff := NewIngester(cfg, b.js, NewStore(dead), NewMetrics(prometheus.NewRegistry()), log)
	require.NoError(t, cutOff.Setup(ctx))
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cutOff.Run(cctx) }()
	t.Cleanup(func() { cancel(); <-done })

	const n = 30
	for range n {
		_, err := b.js.Publish(ctx, "dlq.acme.orders.created", []byte(`{}`))
		require.NoError(t, err)
	}
	wait.Until(t, "the cut-off replica holds a batch", 30*time.Second, func() bool {
		return testutil.ToFloat64(cutOff.metrics.StoreErrors) > 0
	})

	b.start(t, cfg, nil) // the healthy replica
	wait.Until(t, "every dead letter stored by the replica that reaches PostgreSQL", 45*time.Second, func() bool {
		return countRows(t, b.db.Pool, "true") == n
	})
}
