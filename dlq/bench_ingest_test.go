package dlq

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// benchTotal is how many dead letters the ingest benchmark stores.
const benchTotal = 100_000

// benchMsg is dead letter i of the benchmark: 1 KB payload, full contract
// headers, four tenants, five item types.
func benchMsg(i int, payload []byte) *nats.Msg {
	return &nats.Msg{Subject: fmt.Sprintf("dlq.tenant%d.bench.item%d", i%4, i%5), Data: payload, Header: nats.Header{
		HeaderOriginalSubject: {"app.bench.item"}, HeaderOriginalMsgID: {fmt.Sprintf("m-%d", i)},
		HeaderError: {fmt.Sprintf("order %d failed: gateway 502", i)}, HeaderErrorClass: {"transient"},
		HeaderAttempts: {"3"}, HeaderStack: {`main.handle()\n\t/app/h.go:12 +0x1d\nmain.main()\n\t/app/main.go:5`},
		HeaderCorrelationID: {fmt.Sprintf("c-%d", i)},
	}}
}

func benchPayload() []byte {
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}
	return payload
}

// publishAll puts total benchmark messages into the DLQ stream as fast as
// the client can (async, at most 2,000 outstanding) and returns how long
// it took.
func publishAll(b *testing.B, js jetstream.JetStream, total int) time.Duration {
	payload := benchPayload()
	start := time.Now()
	for i := range total {
		if _, err := js.PublishMsgAsync(benchMsg(i, payload)); err != nil {
			b.Fatal(err)
		}
		if i%2000 == 1999 { // stay under the client's 4,000 outstanding async publishes
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	return time.Since(start)
}

// BenchmarkIngestEndToEnd measures ingest into PostgreSQL and, in the same
// run and on the same machine, the two bare limits it is held to; run it
// with -benchtime=1x (make bench-ingest):
//
//   - msgs/s: 100,000 dead letters (1 KB payloads, full contract headers)
//     published as fast as the client can while the ingester runs, from
//     the first publish to the last message acked after its row committed
//     (as recorded since the first release);
//   - drain-msgs/s: the same 100,000, already in the stream, stored from a
//     standing start (the ingester's own rate, publishing out of the way);
//   - bare-consume-msgs/s: the same messages consumed and acked by a pull
//     consumer that stores nothing (JetStream's limit);
//   - bare-copy-rows/s: the same messages, parsed, written with pgx
//     CopyFrom into an unindexed, unpartitioned copy of dead_letters
//     (PostgreSQL's limit);
//   - ratio: drain-msgs/s over the lower of the two bare limits (goal:
//     0.6 or more);
//   - drain-cpu-busy-%: how busy the machine's cores were while the
//     ingester drained (100: all of them all along; the rate is then what
//     the cores can do, NATS, the ingester and PostgreSQL together);
//   - drain-go-cpu-us/msg and drain-pg-cpu-us/msg: the CPU time this
//     process (NATS server and ingester) and the PostgreSQL server (all
//     its processes; when it runs on this machine) used while draining,
//     per message: what the drain costs, whatever else uses the machine;
//   - indexed-copy-rows/s: the same rows with pgx CopyFrom into
//     dead_letters itself, partitioned and with every index the pages
//     need, and ratio-indexed: drain-msgs/s over it (how close the
//     ingester comes to what PostgreSQL can do with those indexes).
//
// BENCH_WORKERS and BENCH_BATCH override the ingester's writers and batch
// size (defaults: IngestConfig's, as the console runs).
func BenchmarkIngestEndToEnd(b *testing.B) {
	cfg := IngestConfig{Workers: benchEnv(b, "BENCH_WORKERS"), BatchSize: benchEnv(b, "BENCH_BATCH")}
	for b.Loop() {
		ctx := context.Background()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))

		// Published while the ingester runs.
		bb := setupB(b)
		checkpoint(b, bb.db)
		in := NewIngester(cfg, bb.js, bb.store, NewMetrics(prometheus.NewRegistry()), log)
		require.NoError(b, in.Setup(ctx))
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = in.Run(rctx) }()
		start := time.Now()
		published := publishAll(b, bb.js, benchTotal)
		waitAcked(b, bb.js, "quarantine-ingest", benchTotal)
		elapsed := time.Since(start)
		cancel()
		<-done
		p50, p99, maxLag := lagOf(b, bb)

		// From a backlog: the same messages, already in a fresh stream.
		drain := setupB(b)
		in = NewIngester(cfg, drain.js, drain.store, NewMetrics(prometheus.NewRegistry()), log)
		require.NoError(b, in.Setup(ctx))
		publishAll(b, drain.js, benchTotal)
		checkpoint(b, drain.db)
		rctx, cancel = context.WithCancel(ctx)
		done = make(chan struct{})
		cpu := readCPU(b)
		used := readUsed(b, drain.db.Pool)
		start = time.Now()
		go func() { defer close(done); _ = in.Run(rctx) }()
		waitAcked(b, drain.js, "quarantine-ingest", benchTotal)
		drained := time.Since(start)
		busy := readCPU(b).busySince(cpu)
		usedNow := readUsed(b, drain.db.Pool)
		cancel()
		<-done
		var rows int
		require.NoError(b, drain.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&rows))
		require.Equal(b, benchTotal, rows)

		consumed := bareConsume(b, drain.js)
		copied, indexedCopy := bareCopy(b, drain)

		b.ReportMetric(float64(benchTotal)/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(float64(benchTotal)/published.Seconds(), "publish-msgs/s")
		b.ReportMetric(p50*1000, "p50-lag-ms")
		b.ReportMetric(p99*1000, "p99-lag-ms")
		b.ReportMetric(maxLag*1000, "max-lag-ms")
		b.ReportMetric(elapsed.Seconds(), "total-s")
		ours := float64(benchTotal) / drained.Seconds()
		consume := float64(benchTotal) / consumed.Seconds()
		cp := float64(benchTotal) / copied.Seconds()
		b.ReportMetric(ours, "drain-msgs/s")
		b.ReportMetric(busy, "drain-cpu-busy-%")
		b.ReportMetric((usedNow.self-used.self)*1e6/benchTotal, "drain-go-cpu-us/msg")
		if used.pg > 0 && usedNow.pg > 0 {
			b.ReportMetric((usedNow.pg-used.pg)*1e6/benchTotal, "drain-pg-cpu-us/msg")
		}
		b.ReportMetric(consume, "bare-consume-msgs/s")
		b.ReportMetric(cp, "bare-copy-rows/s")
		b.ReportMetric(ours/min(consume, cp), "ratio")
		b.ReportMetric(float64(benchTotal)/indexedCopy.Seconds(), "indexed-copy-rows/s")
		b.ReportMetric(ours/(float64(benchTotal)/indexedCopy.Seconds()), "ratio-indexed")
	}
}

// cpuTimes are the machine's CPU times from /proc/stat, in ticks: all of
// them and the idle ones (idle and waiting for I/O).
type cpuTimes struct{ total, idle uint64 }

// readCPU reads the machine's CPU times.
func readCPU(b *testing.B) cpuTimes {
	data, err := os.ReadFile("/proc/stat")
	require.NoError(b, err)
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	require.Greater(b, len(fields), 5, "/proc/stat: %s", line)
	var t cpuTimes
	for i, f := range fields[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		require.NoError(b, err)
		if i < 8 { // guest times are counted in user already
			t.total += n
		}
		if i == 3 || i == 4 {
			t.idle += n
		}
	}
	return t
}

// busySince is the share of the machine's CPU time, in percent, that was
// busy between then and t: 100 means every core worked all along.
func (t cpuTimes) busySince(then cpuTimes) float64 {
	total := t.total - then.total
	if total == 0 {
		return 0
	}
	return 100 * float64(total-(t.idle-then.idle)) / float64(total)
}

// cpuUsed is CPU time used so far, in seconds: by this process, and by
// the PostgreSQL server (0 when its processes cannot be read here).
type cpuUsed struct{ self, pg float64 }

// readUsed reads the CPU time this process and the PostgreSQL server of
// pool have used: the server's is its postmaster's and every child's,
// those that ended included (a parent's cutime and cstime hold them).
func readUsed(b *testing.B, pool *pgxpool.Pool) cpuUsed {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	u := cpuUsed{self: float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9}
	var backend int
	require.NoError(b, pool.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&backend))
	st, ok := procStat(backend)
	if !ok {
		return u
	}
	postmaster := st.ppid
	if st, ok = procStat(postmaster); !ok {
		return u
	}
	ticks := st.ticks
	entries, err := os.ReadDir("/proc")
	require.NoError(b, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(pid); ok && st.ppid == postmaster {
			ticks += st.ticks
		}
	}
	u.pg = float64(ticks) / 100 // USER_HZ
	return u
}

// stat is what procStat reads of a process: its parent, and the CPU
// ticks it and its ended children used.
type stat struct {
	ppid  int
	ticks uint64
}

// procStat reads /proc/pid/stat; false when it cannot.
func procStat(pid int) (stat, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, false
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(data[i+1:])) // state ppid ... utime(11) stime cutime cstime
	if len(f) < 15 {
		return stat{}, false
	}
	var st stat
	st.ppid, _ = strconv.Atoi(f[1])
	for _, x := range f[11:15] {
		n, _ := strconv.ParseUint(x, 10, 64)
		st.ticks += n
	}
	return st, true
}

// benchEnv is the integer in environment variable name, 0 when unset.
func benchEnv(b *testing.B, name string) int {
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, name)
	return n
}

// waitAcked waits until consumer durable of the DLQ stream has acked total
// messages.
func waitAcked(b *testing.B, js jetstream.JetStream, durable string, total int) {
	ctx := context.Background()
	cons, err := js.Consumer(ctx, "DLQ", durable)
	require.NoError(b, err)
	for {
		info, err := cons.Info(ctx)
		require.NoError(b, err)
		if info.AckFloor.Stream >= uint64(total) && info.NumAckPending == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lagOf is the store lag of bb's rows (received_at - dead_lettered_at):
// p50, p99 and max, in seconds.
func lagOf(b *testing.B, bb *bundle) (p50, p99, maxLag float64) {
	var rows int
	require.NoError(b, bb.db.Pool.QueryRow(context.Background(), `SELECT count(*),
        percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM received_at - dead_lettered_at)),
        percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM received_at - dead_lettered_at)),
        max(extract(epoch FROM received_at - dead_lettered_at))
        FROM dead_letters`).Scan(&rows, &p50, &p99, &maxLag))
	require.Equal(b, benchTotal, rows)
	return p50, p99, maxLag
}

// bareConsume consumes the DLQ stream's messages with a consumer of its
// own, as the ingester does (pull, batches of 2,000, explicit acks) but
// storing nothing, and returns how long acking them all took.
func bareConsume(b *testing.B, js jetstream.JetStream) time.Duration {
	ctx := context.Background()
	cons, err := js.CreateOrUpdateConsumer(ctx, "DLQ", jetstream.ConsumerConfig{
		Durable: "bare", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 20_000, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	require.NoError(b, err)
	var acked atomic.Int64
	finished := make(chan struct{})
	start := time.Now()
	cc, err := cons.Consume(func(m jetstream.Msg) {
		_ = m.Ack()
		if acked.Add(1) == benchTotal {
			close(finished)
		}
	}, jetstream.PullMaxMessagesWithBytesLimit(2000, 64<<20))
	require.NoError(b, err)
	<-finished
	cc.Stop()
	waitAcked(b, js, "bare", benchTotal)
	return time.Since(start)
}

// bareCopy parses the DLQ stream's messages as the ingester does, then
// writes them with pgx CopyFrom into bare_dead_letters, an unindexed and
// unpartitioned copy of dead_letters (as the owner: the runtime role may
// create no table), then into dead_letters itself, and returns how long
// each COPY took.
func bareCopy(b *testing.B, bb *bundle) (bare, indexed time.Duration) {
	ctx := context.Background()
	payload := benchPayload()
	stored := time.Now()
	rows := make([][]any, benchTotal)
	for i := range benchTotal {
		m := benchMsg(i, payload)
		r := ParseDLQ(DefaultSubjectPrefix, Received{Subject: m.Subject, Header: m.Header, Data: m.Data, Stream: "DLQ", Seq: uint64(i + 1),
			Time: stored.Add(time.Duration(i) * time.Microsecond)})
		headers, err := json.Marshal(r.Headers)
		require.NoError(b, err)
		reasons, flags := r.MalformedReasons, r.Flags
		if reasons == nil {
			reasons = []string{}
		}
		if flags == nil {
			flags = []string{}
		}
		rows[i] = []any{r.Tenant, r.ItemType, r.Subject, r.OriginalSubject, r.MsgID, r.MsgIDDerived, r.OperationID, r.CorrelationID,
			r.Principal, r.Consumer, r.Error, string(r.ErrorClass), r.Stack, r.Attempts, r.FirstFailedAt, r.LastFailedAt, r.DeadLetteredAt,
			string(headers), r.Payload, r.PayloadSHA256[:], int32(len(r.Payload)), r.PayloadUnavailable, r.Fingerprint, r.Malformed(),
			reasons, flags, r.SourceKind, r.SourceStream, int64(r.SourceSeq), r.SourceConsumer, r.SourceKey[:], r.Delivery}
	}
	columns := strings.Fields(`tenant item_type subject original_subject
        msg_id msg_id_derived operation_id correlation_id principal consumer error error_class stack attempts first_failed_at
        last_failed_at dead_lettered_at headers payload payload_sha256 payload_size payload_unavailable fingerprint malformed
        malformed_reasons flags source_kind source_stream source_seq source_consumer source_key delivery`)
	owner, err := pgx.Connect(ctx, bb.db.OwnerURL)
	require.NoError(b, err)
	defer owner.Close(ctx)
	_, err = owner.Exec(ctx, `CREATE TABLE bare_dead_letters (LIKE dead_letters INCLUDING DEFAULTS INCLUDING IDENTITY)`)
	require.NoError(b, err)
	checkpoint(b, bb.db)
	start := time.Now()
	n, err := owner.CopyFrom(ctx, pgx.Identifier{"bare_dead_letters"}, columns, pgx.CopyFromRows(rows))
	bare = time.Since(start)
	require.NoError(b, err)
	require.Equal(b, int64(benchTotal), n)

	// The same rows into dead_letters itself (partitioned, every index the
	// pages need; these rows' keys differ from the ingested ones by their
	// stored time): what PostgreSQL can do with those indexes.
	checkpoint(b, bb.db)
	start = time.Now()
	n, err = owner.CopyFrom(ctx, pgx.Identifier{"dead_letters"}, columns, pgx.CopyFromRows(rows))
	indexed = time.Since(start)
	require.NoError(b, err)
	require.Equal(b, int64(benchTotal), n)
	return bare, indexed
}

// checkpoint starts a measurement from clean buffers: the dirty pages of
// earlier work must not be flushed inside it. (Needs superuser or
// pg_checkpoint: the administrator's connection, not the console's role.)
func checkpoint(b *testing.B, db *testdb.DB) {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, db.AdminURL)
	if err != nil {
		b.Logf("checkpoint before the run: %v", err)
		return
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CHECKPOINT"); err != nil {
		b.Logf("checkpoint before the run: %v", err)
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
