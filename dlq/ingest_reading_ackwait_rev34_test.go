package dlq

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev34ReadingKeepsTheBatchInProgress: a writer kept its batch in
// progress only from the insert on, not while it made the records
// (records: header blocks and payloads read again from the stream, 8 at a
// time, each up to 10 s while JetStream is slow). A batch whose re-reads
// outlast AckWait was delivered again, healthy dead letters included, to
// another writer while the first still held it, and each delivery counted
// toward maxHeaderRereads and positionFormDue. Here the first batch's
// records take 2.5 AckWaits: no dead letter of it is delivered twice.
func TestRev34ReadingKeepsTheBatchInProgress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := IngestConfig{Workers: 1, MaxWait: 300 * time.Millisecond, AckWait: time.Second}
	b.start(t, cfg, nil).stop() // makes the stream and consumer; the dead letters then come in one batch
	const n = 5
	for i := range n {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(fmt.Sprintf("healthy-%d", i))})
	}

	in := NewIngester(cfg, b.js, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	var first sync.Once
	in.whileReading = func() {
		// The first batch's re-reads outlast its AckWait (JetStream slow).
		first.Do(func() { <-time.After(5 * cfg.AckWait / 2) })
	}
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, in.Setup(ctx))
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	wait.Until(t, "the dead letters stored", time.Minute, func() bool { return countRows(t, b.db.Pool, "true") == n })
	cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	info, err := cons.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(n), info.Delivered.Consumer, "each dead letter delivered once: none came again while its batch's records were made")
}
