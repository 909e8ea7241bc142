package dlq

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

type bundle struct {
	db    *testdb.DB
	ns    *natstest.Server
	nc    *nats.Conn
	js    jetstream.JetStream
	store *Store
	log   *slog.Logger // for the ingesters start makes; nil discards
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{db: testdb.New(t), ns: natstest.Start(t)}
	b.nc, b.js = b.ns.Connect(t)
	b.store = NewStore(b.db.Pool)
	return b
}

type running struct {
	*Ingester
	metrics *Metrics
	stop    func()
}

// start runs an ingester until the test ends or stop is called.
func (b *bundle) start(t *testing.T, cfg IngestConfig, hook func(n int) bool) *running {
	t.Helper()
	m := NewMetrics(prometheus.NewRegistry())
	log := b.log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	in := NewIngester(cfg, b.js, b.store, m, log)
	in.afterCommit = hook
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, in.Setup(ctx))
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	var stopped atomic.Bool
	stop := func() {
		if stopped.Swap(true) {
			return
		}
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("ingester did not stop within 10s")
		}
	}
	t.Cleanup(stop)
	return &running{Ingester: in, metrics: m, stop: stop}
}

func countRows(t *testing.T, pool *pgxpool.Pool, where string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM dead_letters WHERE "+where, args...).Scan(&n))
	return n
}

func (b *bundle) waitRows(t *testing.T, n int) {
	t.Helper()
	wait.Until(t, fmt.Sprintf("%d rows", n), time.Minute, func() bool {
		var got int
		// Errors count as "not yet": the pool may hold connections killed by an outage.
		err := b.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM dead_letters").Scan(&got)
		return err == nil && got >= n
	})
}

func (b *bundle) createStream(t *testing.T, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	s, err := b.js.CreateStream(context.Background(), cfg)
	require.NoError(t, err)
	return s
}

func TestIngestStoresFullContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.start(t, IngestConfig{}, nil)

	// A real consumer takes a message from its stream and dead-letters it.
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"app.*.email.>"}})
	orig := &nats.Msg{Subject: "app.acme.email.send", Data: []byte(`{"to":"a@example.com"}`), Header: nats.Header{}}
	orig.Header.Set("Nats-Msg-Id", "mail-77")
	orig.Header.Set("X-Trace", "trace-1")
	_, err := b.js.PublishMsg(ctx, orig)
	require.NoError(t, err)
	cons, err := b.js.CreateConsumer(ctx, "EMAILS", jetstream.ConsumerConfig{Durable: "mailer", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	require.NoError(t, err)
	first := time.Date(2026, 11, 29, 8, 0, 0, 123000000, time.UTC)
	last := time.Date(2026, 11, 29, 9, 0, 0, 456000000, time.UTC)
	stack := "goroutine 1 [running]:\nmain.send()\n\t/app/send.go:42 +0x1d"
	require.NoError(t, Publish(ctx, b.js, "dlq", "acme", "email.send", msg, Failure{
		Err: errors.New("smtp 550: mailbox unavailable"), Class: ClassPermanent, Attempts: 4, Stack: stack,
		FirstFailedAt: first, LastFailedAt: last, Consumer: "mailer",
		OperationID: "op-send-77", CorrelationID: "corr-5", Principal: "user:alice",
	}))
	require.NoError(t, msg.Ack())

	b.waitRows(t, 1)
	d, err := b.store.BySource(ctx, "DLQ", 1, "")
	require.NoError(t, err)
	assert.Equal(t, "acme", d.Tenant)
	assert.Equal(t, "email.send", d.ItemType)
	assert.Equal(t, "dlq.acme.email.send", d.Subject)
	assert.Equal(t, "app.acme.email.send", d.OriginalSubject)
	assert.Equal(t, "mail-77", d.MsgID)
	assert.False(t, d.MsgIDDerived)
	assert.Equal(t, "op-send-77", d.OperationID)
	assert.Equal(t, "corr-5", d.CorrelationID)
	assert.Equal(t, "user:alice", d.Principal)
	assert.Equal(t, "mailer", d.Consumer)
	assert.Equal(t, "smtp 550: mailbox unavailable", d.Error)
	assert.Equal(t, ClassPermanent, d.ErrorClass)
	assert.Equal(t, stack, d.Stack)
	require.NotNil(t, d.Attempts)
	assert.Equal(t, int32(4), *d.Attempts)
	assert.True(t, first.Equal(*d.FirstFailedAt), "first failed at %v", d.FirstFailedAt)
	assert.True(t, last.Equal(*d.LastFailedAt), "last failed at %v", d.LastFailedAt)
	assert.WithinDuration(t, time.Now(), d.DeadLetteredAt, time.Minute)
	assert.False(t, d.ReceivedAt.Before(d.DeadLetteredAt.Add(-time.Second)))
	assert.Equal(t, []byte(`{"to":"a@example.com"}`), d.Payload)
	sum := sha256.Sum256(d.Payload)
	assert.Equal(t, sum[:], d.PayloadSHA256)
	assert.Equal(t, int32(len(d.Payload)), d.PayloadSize)
	assert.Equal(t, Fingerprint(ClassPermanent, d.Error, stack), d.Fingerprint)
	assert.False(t, d.Malformed, "reasons: %v", d.MalformedReasons)
	assert.Equal(t, StatusQuarantined, d.Status)
	assert.Equal(t, int32(1), d.Version)
	assert.Equal(t, SourceDLQ, d.SourceKind)
	hs, err := d.Headers()
	require.NoError(t, err)
	got, err := DecodeHeaders(hs)
	require.NoError(t, err)
	assert.Equal(t, []string{"trace-1"}, got["X-Trace"], "the original's own headers are kept")
	assert.Equal(t, []string{"acme"}, got[HeaderTenant])
	assert.Equal(t, []string{"dlq:mailer:mail-77:EMAILS:1"}, got[HeaderNatsMsgID], "the dead letter's own dedupe id: the original's id and where it lived")
}

func TestIngestRedeliveryMakesOneRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	cfg := IngestConfig{AckWait: time.Second}
	// The first ingester commits and "crashes" before acking.
	var commits atomic.Int32
	first := b.start(t, cfg, func(int) bool { commits.Add(1); return false })
	for i := range 3 {
		_, err := b.js.Publish(ctx, fmt.Sprintf("dlq.acme.search.index_update.%d", i), []byte("x"))
		require.NoError(t, err)
	}
	b.waitRows(t, 3)
	first.stop()
	require.Positive(t, commits.Load())

	// JetStream delivers the unacked messages again; a new ingester sees them.
	b.start(t, cfg, nil)
	cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	wait.Until(t, "redelivered messages acked", time.Minute, func() bool {
		info, err := cons.Info(ctx)
		require.NoError(t, err)
		return info.NumAckPending == 0 && info.NumPending == 0 && info.NumRedelivered == 0 && info.Delivered.Consumer >= 6
	})
	assert.Equal(t, 3, countRows(t, b.db.Pool, "true"), "redelivery made no second row")
	assert.Equal(t, int64(3), foldedCount(t, b.db.Pool), "depth counters match the rows, once folded")
}

// foldedCount folds the counters and returns the dead letters they count.
func foldedCount(t *testing.T, db *pgxpool.Pool) int64 {
	t.Helper()
	ctx := context.Background()
	_, err := FoldCounters(ctx, db)
	require.NoError(t, err)
	var counted int64
	require.NoError(t, db.QueryRow(ctx, "SELECT coalesce(sum(n), 0) FROM dead_letter_counts").Scan(&counted))
	return counted
}

func TestIngestMalformedIsKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.start(t, IngestConfig{}, nil)

	big := make([]byte, 5<<20)
	for i := range big {
		big[i] = byte(i)
	}
	msgs := []*nats.Msg{
		{Subject: "dlq.acme.orders.refund", Data: []byte(`{"no":"headers"}`)},
		{Subject: "dlq.acme.orders.refund", Header: nats.Header{
			HeaderErrorClass: {"???"}, HeaderAttempts: {"many"}, HeaderFirstFailedAt: {"tomorrow"},
			HeaderOriginalSubject: {"orders.>"}, HeaderTenant: {"globex"},
		}, Data: []byte("garbage values")},
		{Subject: "dlq.acme.orders.refund", Header: nats.Header{
			HeaderError: {"bad \xff\xfe bytes \x00 here"}, HeaderStack: {"\xc3\x28"}, "X-Bin": {"\x80\x81"},
			HeaderOriginalSubject: {"app.acme.orders.refund"},
		}, Data: []byte{0xff, 0x00, 0xfe}},
		{Subject: "dlq.acme.orders.refund", Header: nats.Header{HeaderOriginalSubject: {"app.acme.orders.refund"}}, Data: nil},
		{Subject: "dlq.acme.orders.refund", Header: nats.Header{HeaderOriginalSubject: {"app.acme.orders.refund"}}, Data: big},
		{Subject: "dlq.globex", Data: []byte("no item type")},
	}
	for _, m := range msgs {
		_, err := b.js.PublishMsg(ctx, m)
		require.NoError(t, err)
	}
	b.waitRows(t, len(msgs))

	get := func(seq uint64) DeadLetter {
		d, err := b.store.BySource(ctx, "DLQ", seq, "")
		require.NoError(t, err)
		return d
	}
	reasons := func(d DeadLetter) string { return strings.Join(d.MalformedReasons, "\n") }

	d := get(1)
	assert.True(t, d.Malformed)
	assert.Contains(t, reasons(d), "Dlq-Original-Subject is missing")
	assert.Equal(t, "DLQ:1@"+storedIn(t, d.Delivery), d.MsgID, "derived: where and when the DLQ stream stored it")

	d = get(2)
	assert.True(t, d.Malformed)
	for _, want := range []string{"Dlq-Error-Class", "Dlq-Attempts", "Dlq-First-Failed-At", "wildcard", "Dlq-Tenant \"globex\" disagrees"} {
		assert.Contains(t, reasons(d), want)
	}
	assert.Equal(t, "acme", d.Tenant, "the subject's tenant wins")

	d = get(3)
	assert.True(t, d.Malformed)
	assert.Equal(t, "bad \uFFFD\uFFFD bytes \uFFFD here", d.Error, "one U+FFFD per bad byte")
	assert.Equal(t, []byte{0xff, 0x00, 0xfe}, d.Payload)
	hs, err := d.Headers()
	require.NoError(t, err)
	raw, err := DecodeHeaders(hs)
	require.NoError(t, err)
	assert.Equal(t, "bad \xff\xfe bytes \x00 here", raw[HeaderError][0])
	assert.Equal(t, "\x80\x81", raw["X-Bin"][0])

	d = get(4)
	assert.False(t, d.Malformed)
	assert.Empty(t, d.Payload)
	assert.Equal(t, int32(0), d.PayloadSize)

	d = get(5)
	assert.Equal(t, big, d.Payload)
	assert.Equal(t, int32(5<<20), d.PayloadSize)

	d = get(6)
	assert.True(t, d.Malformed)
	assert.Equal(t, "globex", d.Tenant)
	assert.Equal(t, "unknown", d.ItemType)

	assert.Equal(t, 3.0, testutil.ToFloat64(r.metrics.Malformed.WithLabelValues("acme")))
	assert.Equal(t, 1.0, testutil.ToFloat64(r.metrics.Malformed.WithLabelValues("globex")))

	// Still running: the next good message is stored.
	_, err = b.js.PublishMsg(ctx, &nats.Msg{Subject: "dlq.acme.search.index_update", Header: nats.Header{HeaderOriginalSubject: {"a.b"}}})
	require.NoError(t, err)
	b.waitRows(t, len(msgs)+1)
}

func TestStoreKeepsRowPostgresRejects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	good := ParseDLQ("dlq", Received{Subject: "dlq.acme.x", Stream: "DLQ", Seq: 1, Time: time.Now(), Data: []byte("ok")})
	bad := ParseDLQ("dlq", Received{Subject: "dlq.acme.x", Stream: "DLQ", Seq: 2, Time: time.Now(), Data: []byte("payload kept")})
	bad.Error = "NUL \x00 sneaked past the parser" // PostgreSQL text cannot hold NUL
	after := ParseDLQ("dlq", Received{Subject: "dlq.acme.x", Stream: "DLQ", Seq: 3, Time: time.Now()})

	res, err := b.store.Insert(ctx, []Record{good, bad, after})
	require.NoError(t, err)
	assert.Len(t, res.Inserted, 3, "one bad row neither blocks the others nor is lost")
	require.Len(t, res.Raw, 1)
	assert.Equal(t, 1, res.Raw[0].Index)
	d, err := b.store.BySource(ctx, "DLQ", 2, "")
	require.NoError(t, err)
	assert.True(t, d.Malformed)
	assert.Contains(t, d.MalformedReasons[0], "stored in raw form")
	assert.Contains(t, d.Flags, "raw_form")
	assert.Equal(t, []byte("payload kept"), d.Payload)
	hs, err := d.Headers()
	require.NoError(t, err)
	assert.Empty(t, hs, "the raw form holds no producer text outside bytes")
	assert.Empty(t, d.OriginalSubject, "a raw form is never replayed")
}

func TestIngestSurvivesDatabaseOutage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.start(t, IngestConfig{BatchSize: 100}, nil)

	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	defer admin.Close()

	// Half the dead letters go before the outage, the rest once it has
	// begun: some always arrive while the database is away, however fast
	// the ingester stored the first half.
	const total = 3000
	published := make(chan error, 1)
	outage := make(chan struct{})
	var sent atomic.Int32
	go func() {
		for i := range total {
			if i == total/2 {
				<-outage
			}
			if _, err := b.js.Publish(ctx, fmt.Sprintf("dlq.acme.analytics.event.%d", i%7), fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
				published <- err
				return
			}
			sent.Add(1)
		}
		published <- nil
	}()

	wait.Until(t, "some rows before the outage", time.Minute, func() bool { return countRows(t, b.db.Pool, "true") > 0 })
	// The database goes away: no new connections, existing ones killed.
	_, err = admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s WITH ALLOW_CONNECTIONS false", b.db.Name))
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", b.db.Name)
	require.NoError(t, err)
	close(outage)
	wait.Until(t, "the ingester to hit the outage", time.Minute, func() bool { return testutil.ToFloat64(r.metrics.StoreErrors) > 0 })
	rowsDuring := sent.Load()

	_, err = admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s WITH ALLOW_CONNECTIONS true", b.db.Name))
	require.NoError(t, err)
	require.NoError(t, <-published)
	b.waitRows(t, total)

	cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	wait.Until(t, "everything acked", time.Minute, func() bool {
		info, err := cons.Info(ctx)
		require.NoError(t, err)
		return info.NumAckPending == 0 && info.NumPending == 0
	})
	assert.Equal(t, total, countRows(t, b.db.Pool, "true"), "every message is exactly one row")
	assert.Equal(t, total, countRows(t, b.db.Pool, "source_seq BETWEEN 1 AND $1", total))
	t.Logf("outage hit after %d of %d published; store errors %v", rowsDuring, total, testutil.ToFloat64(r.metrics.StoreErrors))
}

// failingWorker delivers every message of cons and, per message, naks it
// (until MaxDeliver) or terminates it.
// storedIn returns the stored time a delivery names, as it names it
// ("DLQ #42 stored <RFC 3339 time>").
func storedIn(t *testing.T, delivery string) string {
	t.Helper()
	_, at, ok := strings.Cut(delivery, " stored ")
	require.True(t, ok, delivery)
	return at
}

func failingWorker(t *testing.T, cons jetstream.Consumer, n int, term bool) {
	t.Helper()
	for handled := 0; handled < n; {
		msgs, err := cons.Fetch(10, jetstream.FetchMaxWait(time.Second))
		require.NoError(t, err)
		for m := range msgs.Messages() {
			if term {
				require.NoError(t, m.TermWithReason("schema: field amount missing"))
				handled++
				continue
			}
			md, err := m.Metadata()
			require.NoError(t, err)
			require.NoError(t, m.Nak())
			if md.NumDelivered == 3 {
				handled++
			}
		}
	}
}

func TestAdvisoryMaxDeliveriesCaptured(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws, err := ParseWatchStreams("ORDERS,JOBS")
	require.NoError(t, err)
	b.createStream(t, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"app.*.orders.>"}})
	b.createStream(t, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"app.*.jobs.>"}, Retention: jetstream.WorkQueuePolicy})
	b.start(t, IngestConfig{Watch: ws}, nil)

	m := &nats.Msg{Subject: "app.globex.orders.refund", Data: []byte(`{"amount":10}`), Header: nats.Header{"Nats-Msg-Id": {"refund-1"}}}
	_, err = b.js.PublishMsg(ctx, m)
	require.NoError(t, err)
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 3})
	require.NoError(t, err)
	failingWorker(t, cons, 1, false)

	// On a work-queue stream a terminated message is deleted at once: the
	// row is still stored, flagged payload_unavailable.
	_, err = b.js.Publish(ctx, "app.acme.jobs.rebuild", []byte("job"))
	require.NoError(t, err)
	jobs, err := b.js.CreateConsumer(ctx, "JOBS", jetstream.ConsumerConfig{Durable: "jobber", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	failingWorker(t, jobs, 1, true)

	b.waitRows(t, 2)
	d, err := b.store.BySource(ctx, "ORDERS", 1, "refunder")
	require.NoError(t, err)
	assert.Equal(t, ClassMaxDeliveries, d.ErrorClass)
	assert.Equal(t, "globex", d.Tenant)
	assert.Equal(t, "orders.refund", d.ItemType)
	assert.Equal(t, "app.globex.orders.refund", d.OriginalSubject)
	assert.Equal(t, "refund-1", d.MsgID)
	assert.Equal(t, []byte(`{"amount":10}`), d.Payload)
	assert.Equal(t, int32(3), *d.Attempts)
	assert.Equal(t, SourceAdvisory, d.SourceKind)
	assert.Contains(t, string(d.Advisory), `"stream_seq": 1`)

	g, err := b.store.BySource(ctx, "JOBS", 1, "jobber")
	require.NoError(t, err)
	assert.Equal(t, ClassTerminated, g.ErrorClass)
	assert.Contains(t, g.Error, "schema: field amount missing")
	assert.True(t, g.PayloadUnavailable)
	assert.Equal(t, "JOBS:1@"+storedIn(t, g.Delivery), g.MsgID, "derived, the original gone: when the advisory was stored")
}

func TestAdvisoryCapturedWhileConsoleDown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws, err := ParseWatchStreams("ORDERS")
	require.NoError(t, err)
	b.createStream(t, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"app.*.orders.>"}})
	first := b.start(t, IngestConfig{Watch: ws}, nil)
	first.stop() // the console is down from here on

	for i := range 2 {
		_, err := b.js.Publish(ctx, "app.acme.orders.cancel", fmt.Appendf(nil, "order %d", i))
		require.NoError(t, err)
	}
	_, err = b.js.Publish(ctx, "app.acme.orders.void", []byte("order 3"))
	require.NoError(t, err)
	cancels, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "canceller", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 3, FilterSubject: "app.*.orders.cancel"})
	require.NoError(t, err)
	failingWorker(t, cancels, 2, false)
	voids, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "voider", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "app.*.orders.void"})
	require.NoError(t, err)
	m, err := voids.Next(jetstream.FetchMaxWait(5 * time.Second))
	require.NoError(t, err)
	require.NoError(t, m.TermWithReason("customer closed"))
	assert.Zero(t, countRows(t, b.db.Pool, "true"), "nothing stored while the console is down")

	b.start(t, IngestConfig{Watch: ws}, nil)
	b.waitRows(t, 3)
	assert.Equal(t, 2, countRows(t, b.db.Pool, "error_class = 'max_deliveries'"))
	assert.Equal(t, 1, countRows(t, b.db.Pool, "error_class = 'terminated' AND error LIKE '%customer closed%'"))
	assert.Equal(t, 2, countRows(t, b.db.Pool, "tenant = 'acme' AND item_type = 'orders.cancel' AND NOT payload_unavailable"))
	assert.Equal(t, 1, countRows(t, b.db.Pool, "tenant = 'acme' AND item_type = 'orders.void' AND payload = 'order 3'"))
}

// dropTrigger drops a test's trigger on dead_letters while an ingester may
// be running. DROP TRIGGER locks the partitioned table and every partition,
// so it can meet the ingester's own statements in a deadlock PostgreSQL
// resolves by rolling one side back; it is run again whenever it is the
// side rolled back (for up to a minute: on a loaded machine it lost three
// times in a row, InTx's own bound).
func (b *bundle) dropTrigger(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		err := InTx(ctx, b.db.OwnerPool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "DROP TRIGGER "+pgx.Identifier{name}.Sanitize()+" ON dead_letters")
			return err
		})
		if !LostRace(err) || ctx.Err() != nil {
			require.NoError(t, err)
			return
		}
	}
}

// corruptToast makes every insert into dead_letters of a payload over
// 2,000 bytes fail as a damaged TOAST relation does (XX001
// data_corrupted), a failure of the database, not of the row. extra is
// more PL/pgSQL run after that check, before the row is taken ("" for
// none). The trigger is test_corrupt_toast.
func (b *bundle) corruptToast(t *testing.T, extra string) {
	t.Helper()
	_, err := b.db.OwnerPool.Exec(context.Background(), `
        CREATE FUNCTION test_corrupt_toast() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF octet_length(NEW.payload) > 2000 THEN
                RAISE EXCEPTION 'invalid page in block 7 of relation base/16384/2619_toast' USING ERRCODE = 'XX001';
            END IF;
            `+extra+`
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_corrupt_toast BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_corrupt_toast();`)
	require.NoError(t, err)
}
