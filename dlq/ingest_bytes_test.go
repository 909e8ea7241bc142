package dlq

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// publishBigHeaders publishes n dead letters of three payload bytes under
// 16 KiB of headers each, before any ingester runs.
func (b *bundle) publishBigHeaders(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, NewIngester(IngestConfig{}, b.js, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler)).Setup(ctx))
	big := strings.Repeat("h", 16<<10)
	for i := range n {
		_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: "dlq.acme.analytics.event", Data: []byte("{}\n"), Header: nats.Header{
			HeaderOriginalSubject: {"app.acme.analytics.event"}, HeaderOriginalMsgID: {fmt.Sprintf("big-%d", i)}, "X-Big": {big},
		}})
		require.NoError(t, err)
	}
}

// batchSizes returns an afterCommit hook that notes the size of every
// batch stored, and what it noted so far.
func batchSizes() (func(int) bool, func() []int) {
	var mu sync.Mutex
	var sizes []int
	return func(n int) bool {
			mu.Lock()
			defer mu.Unlock()
			sizes = append(sizes, n)
			return true
		}, func() []int {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(sizes)
		}
}

// TestIngestBatchBytesCountHeaders: a batch stops at MaxBatchBytes of
// payload and headers. Twenty dead letters of 3 payload bytes and 16 KiB
// of headers, all waiting, with room for 1,000 a batch by count and 64 KiB
// by bytes: no batch holds more than 64 KiB and one message.
func TestIngestBatchBytesCountHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 20
	b.publishBigHeaders(t, n)
	hook, batches := batchSizes()
	b.start(t, IngestConfig{BatchSize: 1000, Workers: 1, MaxWait: 200 * time.Millisecond, MaxBatchBytes: 64 << 10}, hook)
	b.waitRows(t, n)
	b.waitDrained(t)
	got := batches()
	assert.LessOrEqual(t, slices.Max(got), 4, "64 KiB holds three messages of 16 KiB headers, and the fourth that crosses it: %v", got)
	assert.GreaterOrEqual(t, len(got), 5, "%v", got)
}

// TestIngestBufferedBytesCountHeaders: the writers hold no more than
// MaxBufferedBytes of payload and headers, received and not yet stored,
// however many messages the batch size and the batch bytes would take.
// With room for two of the messages above, every batch holds at most two,
// and what is held is back to nothing once all are stored.
func TestIngestBufferedBytesCountHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 12
	b.publishBigHeaders(t, n)
	hook, batches := batchSizes()
	r := b.start(t, IngestConfig{BatchSize: 1000, Workers: 1, MaxWait: 100 * time.Millisecond, MaxBatchBytes: 1 << 20, MaxBufferedBytes: 40 << 10}, hook)
	b.waitRows(t, n)
	b.waitDrained(t)
	assert.LessOrEqual(t, slices.Max(batches()), 2, "40 KiB held at most: %v", batches())
	assert.Zero(t, testutil.ToFloat64(r.metrics.BufferedBytes), "everything held was given back")
}
