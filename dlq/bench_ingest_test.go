package dlq

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// BenchmarkIngestEndToEnd publishes 100,000 dead letters with 1 KB payloads
// and full contract headers into the DLQ stream as fast as it can, and
// measures from the first publish until the last row is committed and every
// message acked. Run it with -benchtime=1x (make bench-ingest).
func BenchmarkIngestEndToEnd(b *testing.B) {
	const total = 100_000
	for b.Loop() {
		bb := setupB(b)
		ctx := context.Background()
		m := NewMetrics(prometheus.NewRegistry())
		in := NewIngester(IngestConfig{}, bb.js, bb.store, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.NoError(b, in.Setup(ctx))
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = in.Run(rctx) }()

		// Start from clean buffers: a checkpoint of earlier work must not
		// land inside this measurement. (Needs superuser or pg_checkpoint:
		// the administrator's connection, not the console's runtime role.)
		if admin, err := pgx.Connect(ctx, bb.db.AdminURL); err != nil {
			b.Logf("checkpoint before the run: %v", err)
		} else {
			if _, err := admin.Exec(ctx, "CHECKPOINT"); err != nil {
				b.Logf("checkpoint before the run: %v", err)
			}
			_ = admin.Close(ctx)
		}
		payload := make([]byte, 1024)
		for i := range payload {
			payload[i] = 'a' + byte(i%26)
		}
		start := time.Now()
		for i := range total {
			msg := &nats.Msg{Subject: fmt.Sprintf("dlq.tenant%d.bench.item%d", i%4, i%5), Data: payload, Header: nats.Header{
				HeaderOriginalSubject: {"app.bench.item"}, HeaderOriginalMsgID: {fmt.Sprintf("m-%d", i)},
				HeaderError: {fmt.Sprintf("order %d failed: gateway 502", i)}, HeaderErrorClass: {"transient"},
				HeaderAttempts: {"3"}, HeaderStack: {`main.handle()\n\t/app/h.go:12 +0x1d\nmain.main()\n\t/app/main.go:5`},
				HeaderCorrelationID: {fmt.Sprintf("c-%d", i)},
			}}
			if _, err := bb.js.PublishMsgAsync(msg); err != nil {
				b.Fatal(err)
			}
			if i%2000 == 1999 { // stay under the client's 4,000 outstanding async publishes
				<-bb.js.PublishAsyncComplete()
			}
		}
		<-bb.js.PublishAsyncComplete()
		published := time.Since(start)

		cons, err := bb.js.Consumer(ctx, "DLQ", "quarantine-ingest")
		require.NoError(b, err)
		for {
			info, err := cons.Info(ctx)
			require.NoError(b, err)
			if info.AckFloor.Stream >= total && info.NumAckPending == 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		elapsed := time.Since(start)
		cancel()
		<-done

		var rows int
		var p50, p99, maxLag float64
		require.NoError(b, bb.db.Pool.QueryRow(ctx, `SELECT count(*),
            percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM received_at - dead_lettered_at)),
            percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM received_at - dead_lettered_at)),
            max(extract(epoch FROM received_at - dead_lettered_at))
            FROM dead_letters`).Scan(&rows, &p50, &p99, &maxLag))
		require.Equal(b, total, rows)
		b.ReportMetric(float64(total)/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(float64(total)/published.Seconds(), "publish-msgs/s")
		b.ReportMetric(p50*1000, "p50-lag-ms")
		b.ReportMetric(p99*1000, "p99-lag-ms")
		b.ReportMetric(maxLag*1000, "max-lag-ms")
		b.ReportMetric(elapsed.Seconds(), "total-s")
	}
}

// setupB is setup for benchmarks: a fresh database and NATS server.
func setupB(b *testing.B) *bundle {
	b.Helper()
	bb := &bundle{db: testdb.New(b), ns: natstest.Start(b)}
	bb.nc, bb.js = bb.ns.Connect(b)
	bb.store = NewStore(bb.db.Pool)
	return bb
}
