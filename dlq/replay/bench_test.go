package replay_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// BenchmarkReplay100k replays 100,000 approved items at unlimited rate with
// the ledger, and checks the target stream holds exactly 100,000 distinct
// messages; then, in the same run, publishes the same messages with no
// database (bare-publish-msgs/s), and reports the replay's rate as a ratio
// of that (goal: 0.5 or more). Run it with -benchtime=1x (make
// bench-replay). BENCH_REPLAY_TOTAL replays fewer (or more) items, for
// profiling; the recorded figures are of 100,000.
func BenchmarkReplay100k(b *testing.B) {
	total := benchSetting("BENCH_REPLAY_TOTAL", 100_000)
	for b.Loop() {
		rb, req, requested, payload := benchReplayRequest(b, total)
		ctx := context.Background()
		checkpoint(b, rb.db.AdminURL) // the runtime role may not
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		var peakHeap atomic.Uint64
		stopSampling := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peakHeap.Load() {
					peakHeap.Store(ms.HeapInuse)
				}
				select {
				case <-stopSampling:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})

		workers := benchSetting("BENCH_REPLAY_WORKERS", 2)
		wctx, cancel := context.WithCancel(ctx)
		start := time.Now()
		for i := range workers {
			w := replay.NewWorker(rb.replays, rb.js, nil, nil, replay.WorkerConfig{Owner: fmt.Sprint("w", i), Batch: benchBatch(), Poll: 5 * time.Millisecond},
				slog.New(slog.NewTextHandler(io.Discard, nil)))
			wg.Go(func() { w.Run(wctx) })
		}
		for {
			r, err := rb.replays.Request(ctx, req)
			require.NoError(b, err)
			if r.Status == replay.StatusDone {
				break
			}
			require.NotEqual(b, replay.StatusDoneWithProblems, r.Status, r.StatusReason)
			time.Sleep(20 * time.Millisecond)
		}
		elapsed := time.Since(start)
		cancel()
		close(stopSampling)
		wg.Wait()

		info, err := rb.target.Info(ctx)
		require.NoError(b, err)
		require.Equal(b, uint64(total), info.State.Msgs, "exactly one message per item")
		var ledger, distinct int
		require.NoError(b, rb.db.Pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT msg_id) FROM replay_ledger WHERE NOT duplicate`).Scan(&ledger, &distinct))
		require.Equal(b, total, ledger)
		require.Equal(b, total, distinct)
		bare := barePublish(b, rb.js, total, payload)

		b.ReportMetric(float64(total)/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(bare, "bare-publish-msgs/s")
		b.ReportMetric(float64(total)/elapsed.Seconds()/bare, "ratio")
		b.ReportMetric(elapsed.Seconds(), "replay-s")
		b.ReportMetric(requested.Seconds(), "request-s")
		b.ReportMetric(float64(peakHeap.Load()-min(peakHeap.Load(), base.HeapInuse))/(1<<20), "heap-growth-MiB")
		b.ReportMetric(float64(vmHWM())/1024, "peak-rss-MiB")
	}
}

// benchReplayRequest fills a fresh database with total dead letters of
// 1 KB payloads (an hour old) and requests their replay as one request,
// submitted and approved (the benchmark policy's rebuildable class). It
// returns the bundle, the request, how long requesting took (selection
// and submit) and the payload.
func benchReplayRequest(b testing.TB, total int) (*replayBundle, int64, time.Duration, []byte) {
	b.Helper()
	rb := benchReplaySetup(b)
	ctx := context.Background()
	payload := []byte(strings.Repeat("p", 1024))
	days := benchSetting("BENCH_REPLAY_DAYS", 1) // the days (so partitions) the dead letters arrived over
	for start := 0; start < total; start += 1000 {
		recs := make([]dlq.Record, 0, 1000)
		for i := start; i < min(start+1000, total); i++ {
			recs = append(recs, dlq.ParseDLQ("dlq", dlq.Received{
				Subject: "dlq.acme.search.index_update",
				Header: map[string][]string{
					dlq.HeaderOriginalSubject: {fmt.Sprintf("app.acme.search.index_update.%d", i%50)},
					dlq.HeaderOriginalMsgID:   {fmt.Sprintf("doc-%d", i)}, "X-Trace": {strconv.Itoa(i)},
				},
				// An hour old: out of the target's duplicate window, as a
				// backlog replayed after its fix is.
				Data: payload, Stream: "DLQ", Seq: uint64(i + 1), Time: time.Now().Add(-time.Hour - time.Duration(i%days)*24*time.Hour),
			}))
		}
		_, err := rb.store.Insert(ctx, recs)
		require.NoError(b, err)
	}
	var ids []int64
	rows, err := rb.db.Pool.Query(ctx, `SELECT id FROM dead_letters ORDER BY id`)
	require.NoError(b, err)
	ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(b, err)
	require.Len(b, ids, total)

	start := time.Now()
	batch, err := rb.replays.CreateDrafts(ctx, oncall, ids, nil, true, allowAll, quarantine.RequestMeta{})
	require.NoError(b, err)
	reqs, err := rb.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "benchmark"}, quarantine.RequestMeta{})
	require.NoError(b, err)
	require.Len(b, reqs, 1)
	return rb, reqs[0].ID, time.Since(start), payload
}

// barePublish publishes what the replay published (the same subjects,
// payloads, headers and message ids) with no database: into the target
// stream made again (empty, its duplicate window fresh), async with at
// most 2,048 PubAcks in flight as the workers do, and returns the rate.
func barePublish(b *testing.B, js jetstream.JetStream, total int, payload []byte) float64 {
	b.Helper()
	ctx := context.Background()
	require.NoError(b, js.DeleteStream(ctx, "APP"))
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}})
	require.NoError(b, err)
	start := time.Now()
	for i := range total {
		msg := nats.NewMsg(fmt.Sprintf("app.acme.search.index_update.%d", i%50))
		msg.Data = payload
		msg.Header.Set("X-Trace", strconv.Itoa(i))
		msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("doc-%d", i))
		if _, err := js.PublishMsgAsync(msg); err != nil {
			b.Fatal(err)
		}
		if i%2048 == 2047 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	took := time.Since(start)
	info, err := js.Stream(ctx, "APP")
	require.NoError(b, err)
	require.Equal(b, uint64(total), info.CachedInfo().State.Msgs)
	return float64(total) / took.Seconds()
}

// checkpoint flushes the dirty buffers of what the benchmark wrote
// before it, so that they are not flushed inside the run, as the
// server's administrator (adminURL).
func checkpoint(b *testing.B, adminURL string) {
	b.Helper()
	conn, err := pgx.Connect(context.Background(), adminURL)
	require.NoError(b, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), "CHECKPOINT")
	require.NoError(b, err, "checkpoint before the run")
}

// vmHWM is the process's peak resident set in KiB (Linux).
func vmHWM() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	return 0
}

// benchReplaySetup is setupReplay for the benchmark: a policy whose
// rebuildable class allows 100,000 items at an unlimited rate.
//
// BENCH_REPLAY_DAYS=n spreads the dead letters over n days (so over n
// partitions of dead_letters), as a backlog of a retention period is.
// BENCH_REPLAY_CLASS=dedupe replays them as the dedupe class instead of
// rebuildable: each job then also reads the replay ledger and the other
// jobs of its message id, at its claim and at its publish gate.
func benchReplaySetup(b testing.TB) *replayBundle {
	b.Helper()
	rb := &replayBundle{bundle: setup(b)}
	class := "rebuildable"
	if c := os.Getenv("BENCH_REPLAY_CLASS"); c != "" {
		class = c
	}
	table, err := replaypolicy.Parse("bench.toml", []byte(`
[[rule]]
item_type = "search.*"
class = "`+class+`"
[class.`+class+`]
bulk_cap = 100000
default_rate = 100000
max_rate = 100000
`))
	require.NoError(b, err)
	rb.policy.Store(table)
	rb.replays = replay.New(rb.db.Pool, replay.Config{Policy: rb.policy.Load, Subjects: testSubjects(b)})
	rb.target, err = rb.js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}})
	require.NoError(b, err)
	return rb
}

// benchBatch is BENCH_REPLAY_BATCH, default 2048.
func benchBatch() int { return benchSetting("BENCH_REPLAY_BATCH", 2048) }

// benchSetting is the positive integer in environment variable name, or
// def when it is unset or not one.
func benchSetting(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
