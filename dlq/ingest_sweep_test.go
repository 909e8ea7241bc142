package dlq

import (
	"context"
	"io"
	"log/slog"
	"strings"
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

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// idle is an ingester set up and not running (no consumer of its own
// reading): what a test sweeps with, while another client takes dead
// letters off the durable.
func (b *bundle) idle(t *testing.T, cfg IngestConfig) (*Ingester, *Metrics) {
	t.Helper()
	m := NewMetrics(prometheus.NewRegistry())
	in := NewIngester(cfg, b.js, b.store, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, in.Setup(context.Background()))
	return in, m
}

// peek takes n dead letters off stream's ingest consumer as `nats consumer
// next <stream> quarantine-ingest` does (a pull of one, acked), on a
// client of its own, and waits until the consumer's ack floor is past
// them.
func (b *bundle) peek(t *testing.T, stream string, n int) {
	t.Helper()
	nc, _ := b.ns.Connect(t)
	for range n {
		// Waiting up to 20 s for a message, as `nats consumer next` does: a
		// pull with no_wait may reach the consumer before it knows of a
		// message the stream just stored, and answer 404.
		m, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT."+stream+".quarantine-ingest", []byte(`{"batch":1,"expires":20000000000}`), 30*time.Second)
		require.NoError(t, err)
		require.NotEmpty(t, m.Reply, "a stream message, not a status (%v)", m.Header)
		_, err = nc.Request(m.Reply, []byte("+ACK"), 30*time.Second) // answered once the ack is applied
		require.NoError(t, err)
	}
	cons, err := b.js.Consumer(context.Background(), stream, "quarantine-ingest")
	require.NoError(t, err)
	wait.Until(t, "the ack floor past what was peeked", time.Minute, func() bool {
		info, err := cons.Info(context.Background())
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
}

// swept is the sweep's count of outcome on stream.
func swept(m *Metrics, stream, outcome string) int {
	return int(testutil.ToFloat64(m.Swept.WithLabelValues(stream, outcome)))
}

// sweptTo is the watermark of stream; -1 when it has none.
func (b *bundle) sweptTo(t *testing.T, stream string) int64 {
	t.Helper()
	var to int64 = -1
	err := b.db.Pool.QueryRow(context.Background(), `SELECT swept_to FROM ingest_sweep_watermark WHERE stream = $1`, stream).Scan(&to)
	if err != nil {
		require.ErrorIs(t, err, pgx.ErrNoRows)
	}
	return to
}

// rowsBySeq reads every row of pool made from the DLQ stream, by sequence,
// without what differs between two databases and two moments of storing
// (id, received_at, updated_at).
func rowsBySeq(t *testing.T, pool *pgxpool.Pool) map[int64]DeadLetter {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT `+deadLetterColumns+` FROM dead_letters WHERE source_kind = 'dlq'`)
	require.NoError(t, err)
	all, err := pgx.CollectRows(rows, pgx.RowToStructByName[DeadLetter])
	require.NoError(t, err)
	out := map[int64]DeadLetter{}
	for _, d := range all {
		require.NotNil(t, d.SourceSeq)
		d.ID, d.ReceivedAt, d.UpdatedAt = 0, time.Time{}, time.Time{}
		out[*d.SourceSeq] = d
	}
	return out
}

// TestSweepStoresWhatAPeekAcked: a tired on-call peeks at the DLQ stream
// with `nats consumer next DLQ quarantine-ingest`, which acks: the dead
// letters peeked at are never delivered to the console again. The sweep
// finds them past the ack floor without a row and stores them from the
// stream, each row what ingest would have stored from a delivery (compared
// with a console that ingests the same stream into another database),
// hostile ones flagged as ingest flags them; under the same source key, so
// that the consumer delivering them again later stores nothing twice.
func TestSweepStoresWhatAPeekAcked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, m := b.idle(t, IngestConfig{})

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(`{"n":1}`), Header: nats.Header{
		HeaderOriginalSubject: {"app.acme.search.index_update"}, HeaderOriginalMsgID: {"m-1"}, HeaderError: {"boom"},
		HeaderErrorClass: {"transient"}, HeaderCorrelationID: {"c-1"}, "X-Other": {"kept"},
	}})
	publish(t, b.js, &nats.Msg{Subject: "dlq.globex.orders.refund", Data: []byte("no headers at all")})
	raw := b.ns.DialRaw(t)
	// A header block the NATS client cannot read (a line without a colon).
	_, err := raw.Publish("dlq.acme.orders.refund", []byte("NATS/1.0\r\nDlq-Error: one\r\nno colon here\r\nDlq-Original-Msg-Id: m-3\r\n\r\n"), []byte("hostile block"))
	require.NoError(t, err)
	// A subject that is not UTF-8.
	_, err = raw.Publish("dlq.acme.orders.\xff", []byte("NATS/1.0\r\nDlq-Original-Subject: app.acme.orders\r\n\r\n"), []byte("bad subject"))
	require.NoError(t, err)
	// An oversized message id.
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders.refund", Data: []byte("long id"), Header: nats.Header{HeaderOriginalMsgID: {long("id", 8<<10)}}})
	const n = 5
	b.peek(t, "DLQ", n)

	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(n), res.Missing)
	assert.Equal(t, uint64(n), res.Stored)
	assert.Equal(t, n, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, n, swept(m, "DLQ", "stored"))
	assert.Equal(t, 1, int(testutil.ToFloat64(m.Ingested.WithLabelValues("acme", "search.index_update", "transient"))), "counted as stored dead letters too")
	assert.Equal(t, int64(n), b.sweptTo(t, "DLQ"))

	again, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, sweepResult{}, again, "the watermark at the ack floor: nothing to do")

	// What a console ingesting the same messages from a delivery stores.
	ref := testdb.New(t)
	refIn := NewIngester(IngestConfig{Durable: "reference", Workers: 1, MaxWait: 10 * time.Millisecond, HealthEvery: time.Hour},
		b.js, NewStore(ref.Pool), NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, refIn.Setup(ctx))
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- refIn.Run(rctx) }()
	wait.Until(t, "the reference stored them", time.Minute, func() bool { return countRows(t, ref.Pool, "true") == n })
	stop()
	require.NoError(t, <-done)

	got, want := rowsBySeq(t, b.db.Pool), rowsBySeq(t, ref.Pool)
	require.Len(t, got, n)
	for seq, w := range want {
		// #4's subject too, which JetStream's API gives with U+FFFD for
		// its byte that is not UTF-8 (deliveredSubject).
		assert.Equal(t, w, got[seq], "#%d as a delivery stores it", seq)
	}
	assert.Contains(t, got[3].Flags, "header_line_skipped", "the hostile block flagged as ingest flags it")
	assert.NotNil(t, got[3].HeaderBlock, "and kept exactly")

	// The consumer delivers them all again (moved back, say): nothing twice.
	_, err = b.js.ResetConsumerToSequence(ctx, "DLQ", "quarantine-ingest", 1)
	require.NoError(t, err)
	b.start(t, IngestConfig{Workers: 1, MaxWait: 10 * time.Millisecond, HealthEvery: time.Hour, SweepEvery: time.Hour}, nil)
	b.waitDrained(t)
	assert.Equal(t, n, countRows(t, b.db.Pool, "true"), "a delivery of a swept dead letter is deduplicated")
}

// TestSweepStoresWhatAFilterPassedOver: a filter set on the ingest
// consumer by hand and taken off again between two checks: no check sees
// it, nothing is owed, and the dead letter it passed over is behind the
// ack floor. The running console's sweep stores it.
func TestSweepStoresWhatAFilterPassedOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: time.Hour,
		SweepEvery: 50 * time.Millisecond}, nil)
	wait.Until(t, "the first check", time.Minute, func() bool { return len(r.Health().Streams) == 1 })

	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.FilterSubject = "dlq.acme.>" })
	publish(t, b.js, &nats.Msg{Subject: "dlq.globex.accounts.permission_grant", Data: []byte("passed over")})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("after")})
	wait.Until(t, "the ack floor past the dead letter passed over", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == 2 })
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.FilterSubject = "" })

	wait.Until(t, "the dead letter passed over stored", time.Minute, func() bool {
		return countRows(t, b.db.Pool, "payload = 'passed over'") == 1
	})
	assert.Equal(t, 2, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, 1, swept(r.metrics, "DLQ", "stored"))
	assert.Equal(t, int64(-1), b.owedFrom(t), "no check saw the filter: nothing was owed")
}

// TestSweepSkipsDeletedSequences: dead letters acked by hand, two of them
// then deleted from the stream (nats stream rmm): the sweep stores the
// others and counts the two as deleted, not its to store; the watermark
// passes them.
func TestSweepSkipsDeletedSequences(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, m := b.idle(t, IngestConfig{})
	for _, p := range []string{"one", "two", "three", "four", "five"} {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(p)})
	}
	b.peek(t, "DLQ", 5)
	s, err := b.js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	require.NoError(t, s.DeleteMsg(ctx, 2))
	require.NoError(t, s.DeleteMsg(ctx, 4))

	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(3), res.Stored)
	assert.Equal(t, 3, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'five'"))
	assert.Zero(t, countRows(t, b.db.Pool, "payload IN ('two', 'four')"))
	assert.Equal(t, 3, swept(m, "DLQ", "stored"))
	assert.Equal(t, 2, swept(m, "DLQ", "deleted"))
	assert.Equal(t, int64(5), b.sweptTo(t, "DLQ"))
}

// TestSweepDoesNotBringBackPurged: a dead letter retention removed is not
// stored again by the sweep though the stream still holds it (its source
// key is kept in dead_letters_purged); one whose row went otherwise (a
// DELETE by hand) is: it was lost, not purged.
func TestSweepDoesNotBringBackPurged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.start(t, IngestConfig{Workers: 1, MaxWait: 10 * time.Millisecond, HealthEvery: time.Hour, SweepEvery: time.Hour}, nil)
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("purged")})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("lost")})
	b.waitRows(t, 2)
	b.waitDrained(t)
	r.stop()

	purged := b.row(t, "payload = 'purged'")
	rows, err := b.db.Pool.Query(ctx, deleteBatch, []int64{purged.ID}, []time.Time{purged.DeadLetteredAt}, []string{string(purged.Status)})
	require.NoError(t, err)
	rows.Close()
	require.NoError(t, rows.Err())
	_, err = b.db.Pool.Exec(ctx, `DELETE FROM dead_letters WHERE payload = 'lost'`)
	require.NoError(t, err)
	require.Zero(t, countRows(t, b.db.Pool, "true"))

	in, m := b.idle(t, IngestConfig{})
	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.From)
	assert.Equal(t, uint64(2), res.To)
	assert.Zero(t, countRows(t, b.db.Pool, "payload = 'purged'"), "retention removed it: it stays removed")
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'lost'"))
	assert.Equal(t, 1, swept(m, "DLQ", "stored"))
	assert.Equal(t, int64(2), b.sweptTo(t, "DLQ"))
}

// TestSweepAfterStreamMadeAgain: the DLQ stream is deleted and made again
// (it numbers from 1 again) after the sweep had proven it up to #3; dead
// letters of the new stream acked by hand below that sequence are swept
// all the same: the watermark belongs to the stream made before.
func TestSweepAfterStreamMadeAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, m := b.idle(t, IngestConfig{})
	for _, p := range []string{"old 1", "old 2", "old 3"} {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(p)})
	}
	b.peek(t, "DLQ", 3)
	_, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	require.Equal(t, int64(3), b.sweptTo(t, "DLQ"))

	require.NoError(t, b.js.DeleteStream(ctx, "DLQ"))
	require.NoError(t, in.Setup(ctx))
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("new 1")})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("new 2")})
	b.peek(t, "DLQ", 2)

	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Stored)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'new 1'"))
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'new 2'"))
	assert.Equal(t, 5, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, 5, swept(m, "DLQ", "stored"))
	assert.Equal(t, int64(2), b.sweptTo(t, "DLQ"))
}

// TestSweepOneReplicaAtATime: while one replica sweeps a stream (it holds
// the watermark), another's sweep of it does nothing and says so; the
// first stores what was missing, once.
func TestSweepOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	a, ma := b.idle(t, IngestConfig{})
	other, mo := b.idle(t, IngestConfig{})
	for _, p := range []string{"one", "two", "three"} {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(p)})
	}
	b.peek(t, "DLQ", 3)

	var during sweepResult
	var duringErr error
	calls := 0
	a.sweeping.during = func() {
		calls++
		if calls == 1 {
			during, duringErr = other.sweep(ctx, "DLQ")
		}
	}
	res, err := a.sweep(ctx, "DLQ")
	require.NoError(t, err)
	require.NoError(t, duringErr)
	assert.True(t, during.Busy, "the other replica found the stream being swept")
	assert.Zero(t, during.Stored)
	assert.Equal(t, uint64(3), res.Stored)
	assert.Equal(t, 3, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, 3, swept(ma, "DLQ", "stored"))
	assert.Zero(t, swept(mo, "DLQ", "stored"))

	after, err := other.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, sweepResult{}, after, "nothing left for the other")
}

// TestSweepStoresAnAdvisoryAPeekAcked: the same for the advisory stream:
// a captured advisory acked by hand on DLQ_ADVISORIES is stored by the
// sweep with the original it points at, as its delivery would have been.
func TestSweepStoresAnAdvisoryAPeekAcked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, m := b.idle(t, IngestConfig{Watch: b.watchOrders(t)})
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte(`{"order":1}`), Header: nats.Header{"Nats-Msg-Id": {"o-1"}}})
	adv := `{"type":"io.nats.jetstream.advisory.v1.terminated","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
		`","stream":"ORDERS","consumer":"c1","stream_seq":1,"deliveries":2}`
	publish(t, b.js, &nats.Msg{Subject: AdvisoryTerminated + ".ORDERS.c1", Data: []byte(adv)})
	b.peek(t, "DLQ_ADVISORIES", 1)

	res, err := in.sweep(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.Stored)
	d := b.row(t, "source_kind = 'advisory'")
	assert.Equal(t, "acme", d.Tenant)
	assert.Equal(t, "o-1", d.MsgID)
	assert.Equal(t, []byte(`{"order":1}`), d.Payload)
	assert.Equal(t, ClassTerminated, d.ErrorClass)
	assert.True(t, strings.HasPrefix(d.Delivery, "DLQ_ADVISORIES #1 stored "), d.Delivery)
	assert.Equal(t, 1, swept(m, "DLQ_ADVISORIES", "stored"))
}

// TestSweepKeepsWhatPostgresRefusesForTheNext: a dead letter the sweep
// reads from the stream and PostgreSQL refuses in every form is not
// passed over: the others are stored, the watermark stays before it, and
// the next sweep, PostgreSQL taking it again, stores it.
func TestSweepKeepsWhatPostgresRefusesForTheNext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, m := b.idle(t, IngestConfig{})
	for _, p := range []string{"ok 1", "new 1", "ok 3"} {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(p)})
	}
	b.peek(t, "DLQ", 3)
	refuseNewOne(t, b)

	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Stored)
	assert.Equal(t, 2, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, 1, int(testutil.ToFloat64(m.Unstorable)))
	assert.Equal(t, int64(1), b.sweptTo(t, "DLQ"), "held before the one refused")

	b.dropTrigger(t, "test_refuses_new")
	res, err = in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.Missing, "the one after it was proven stored, not read again")
	assert.Equal(t, uint64(1), res.Stored)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'new 1'"))
	assert.Equal(t, 3, swept(m, "DLQ", "stored"))
	assert.Equal(t, int64(3), b.sweptTo(t, "DLQ"))
}
