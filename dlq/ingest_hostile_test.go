package dlq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/logs"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// long returns a value of n bytes that starts with prefix, different per
// prefix all along (so two long values never share their first 256
// characters by accident), without dots (it may be one subject token).
func long(prefix string, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s-%d_", prefix, i)
	}
	return b.String()[:n]
}

// publish stores m in its stream, waiting for the ack longer than the
// client's default: a loaded machine is no reason to fail.
func publish(t *testing.T, js jetstream.JetStream, m *nats.Msg) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := js.PublishMsg(ctx, m)
	require.NoError(t, err)
}

// ordersStream is the watched stream of these tests.
var ordersStream = jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"app.*.orders.>"}}

// watchOrders makes the stream ORDERS and returns the watch list naming it.
func (b *bundle) watchOrders(t *testing.T) []WatchStream {
	t.Helper()
	b.createStream(t, ordersStream)
	ws, err := ParseWatchStreams(ordersStream.Name)
	require.NoError(t, err)
	return ws
}

// waitDrained waits until the ingest consumer of the DLQ stream has
// nothing left to deliver and nothing unacked.
func (b *bundle) waitDrained(t *testing.T) {
	t.Helper()
	cons, err := b.js.Consumer(context.Background(), "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	wait.Until(t, "every message acked", time.Minute, func() bool {
		info, err := cons.Info(context.Background())
		require.NoError(t, err)
		return info.NumAckPending == 0 && info.NumPending == 0
	})
}

// row returns the one dead letter where selects.
func (b *bundle) row(t *testing.T, where string, args ...any) DeadLetter {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `SELECT `+deadLetterColumns+` FROM dead_letters WHERE `+where, args...)
	require.NoError(t, err)
	d, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[DeadLetter])
	require.NoError(t, err, where)
	return d
}

func TestIngestOversizedFieldsDoNotStall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.start(t, IngestConfig{}, nil)

	// Every indexed field oversized, in every tenant (two ordinary ones and
	// one whose subject token is itself too long), item type tokens too.
	// (JetStream takes at most 64 KB of headers per message.)
	longTenant := long("tenant", 1500)
	tenants := []string{"acme", "globex", longTenant}
	longType := long("type", 2000)
	ids := map[string]map[string]string{}
	name := func(tenant string) string { return tenant[:min(len(tenant), 6)] }
	for _, tenant := range tenants {
		v := map[string]string{
			HeaderOriginalMsgID:   long("msg-"+name(tenant), 8<<10),
			HeaderOperationID:     long("op-"+name(tenant), 8<<10),
			HeaderCorrelationID:   long("corr-"+name(tenant), 8<<10),
			HeaderOriginalSubject: "app." + long("subject", 4<<10),
			HeaderError:           long("error", 4<<10),
			HeaderStack:           long("stack", 4<<10),
			HeaderConsumer:        long("consumer", 4<<10),
			HeaderPrincipal:       long("principal", 4<<10),
			HeaderTenant:          long("tenant_header", 4<<10),
			HeaderItemType:        long("type_header", 4<<10),
		}
		ids[tenant] = v
		h := nats.Header{}
		for k, x := range v {
			h.Set(k, x)
		}
		publish(t, b.js, &nats.Msg{Subject: "dlq." + tenant + "." + longType, Header: h, Data: []byte(`{"big":true}`)})
	}
	// Then ordinary dead letters of every tenant: they must not wait behind
	// the big ones.
	const normal = 50
	for i := range normal {
		for _, tenant := range tenants {
			publish(t, b.js, &nats.Msg{Subject: "dlq." + tenant + ".search.index_update", Header: nats.Header{
				HeaderOriginalSubject: {"app." + "x.search"}, HeaderOriginalMsgID: {fmt.Sprintf("n-%d", i)},
			}})
		}
	}
	total := len(tenants) * (normal + 1)
	wait.Until(t, fmt.Sprintf("%d rows", total), time.Minute, func() bool { return countRows(t, b.db.Pool, "true") == total })
	b.waitDrained(t)
	assert.Zero(t, testutil.ToFloat64(r.metrics.StoreErrors))
	assert.Zero(t, testutil.ToFloat64(r.metrics.RawForm.WithLabelValues("acme")), "the parsed form fits: nothing needed the raw form")

	longKey := BoundedKey(longTenant, MaxTenantBytes)
	for _, tenant := range tenants {
		v := ids[tenant]
		key := BoundedKey(tenant, MaxTenantBytes)
		d := b.row(t, "tenant = $1 AND msg_id = $2", key, v[HeaderOriginalMsgID])
		assert.Equal(t, v[HeaderOriginalMsgID], d.MsgID, "stored whole")
		assert.Equal(t, v[HeaderOperationID], d.OperationID)
		assert.Equal(t, v[HeaderCorrelationID], d.CorrelationID)
		assert.Equal(t, v[HeaderOriginalSubject], d.OriginalSubject)
		assert.Equal(t, v[HeaderError], d.Error)
		assert.Equal(t, "dlq."+tenant+"."+longType, d.Subject, "the subject keeps the whole tenant and item type")
		assert.Equal(t, BoundedKey(longType, MaxItemTypeBytes), d.ItemType)
		assert.LessOrEqual(t, len(d.ItemType), MaxItemTypeBytes)
		for _, f := range []string{"oversized:item_type", "oversized:msg_id", "oversized:operation_id", "oversized:correlation_id",
			"oversized:original_subject", "oversized:error"} {
			assert.Contains(t, d.Flags, f, name(tenant))
		}
		if tenant == longTenant {
			assert.Equal(t, longKey, d.Tenant)
			assert.LessOrEqual(t, len(d.Tenant), MaxTenantBytes)
			assert.Contains(t, d.Flags, "oversized:tenant")
		}

		// Still found by exact value, in its tenant.
		for _, f := range []ListFilter{
			{Tenants: []string{key}, MsgID: v[HeaderOriginalMsgID]},
			{Tenants: []string{key}, OperationID: v[HeaderOperationID]},
			{Tenants: []string{key}, CorrelationID: v[HeaderCorrelationID]},
			{Tenants: tenants[:2], Tenant: key, MsgID: v[HeaderOriginalMsgID]},
		} {
			if f.Tenant != "" {
				f.Tenants = []string{"acme", "globex", longKey}
			}
			page, err := b.store.ListDeadLetters(ctx, f)
			require.NoError(t, err)
			require.Len(t, page.Items, 1, "%s: %+v", name(tenant), f.Tenant)
			assert.Equal(t, d.ID, page.Items[0].ID)
		}
		// A different id with the same first 256 characters finds nothing.
		page, err := b.store.ListDeadLetters(ctx, ListFilter{Tenants: []string{key}, MsgID: v[HeaderOriginalMsgID][:300]})
		require.NoError(t, err)
		assert.Empty(t, page.Items)
	}
	assert.Equal(t, 2*normal, countRows(t, b.db.Pool, "item_type = 'search.index_update' AND flags = '{}'"), "acme's and globex's ordinary ones")
	assert.Equal(t, normal, countRows(t, b.db.Pool, "tenant = $1 AND item_type = 'search.index_update' AND flags = '{oversized:tenant}'", longKey))

	// A replay of such a dead letter publishes the whole id:
	// TestReplayUsesWholeOversizedMessageID in dlq/replay.
}

func TestIngestPoisonBatchIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var logBuf logs.Buffer
	b.log = slog.New(slog.NewJSONHandler(&logBuf, nil))
	// PostgreSQL refuses one row for a reason the parser cannot foresee.
	_, err := b.db.OwnerPool.Exec(ctx, `ALTER TABLE dead_letters ADD CONSTRAINT test_refuses_poison CHECK (correlation_id <> 'poison-row')`)
	require.NoError(t, err)

	// All 1,000 wait in the stream before the ingester starts, so they
	// come as one batch.
	cfg := IngestConfig{BatchSize: 1000, Workers: 1, MaxWait: 10 * time.Second}
	require.NoError(t, NewIngester(cfg, b.js, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler)).Setup(ctx))
	const total, poison = 1000, 500
	for i := range total {
		corr := fmt.Sprintf("c-%d", i)
		if i == poison {
			corr = "poison-row"
		}
		m := &nats.Msg{Subject: "dlq.acme.analytics.event", Data: fmt.Appendf(nil, `{"n":%d}`, i), Header: nats.Header{
			HeaderOriginalSubject: {"app.acme.analytics.event"}, HeaderOriginalMsgID: {fmt.Sprintf("m-%d", i)},
			HeaderCorrelationID: {corr}, HeaderError: {"boom"}, "X-Trace": {fmt.Sprint(i)},
		}}
		_, err := b.js.PublishMsgAsync(m)
		require.NoError(t, err)
	}
	select {
	case <-b.js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("publishing did not complete")
	}
	var mu sync.Mutex
	var batches []int
	r := b.start(t, cfg, func(n int) bool {
		mu.Lock()
		defer mu.Unlock()
		batches = append(batches, n)
		return true
	})

	b.waitRows(t, total)
	assert.Equal(t, total, countRows(t, b.db.Pool, "true"), "1,000 rows")
	assert.Equal(t, 1, countRows(t, b.db.Pool, "'raw_form' = ANY(flags)"), "one in raw form")
	mu.Lock()
	assert.Equal(t, []int{total}, batches, "one batch of 1,000")
	mu.Unlock()

	d := b.row(t, "'raw_form' = ANY(flags)")
	assert.Equal(t, "acme", d.Tenant, "the raw form stays in its tenant")
	assert.Equal(t, fmt.Appendf(nil, `{"n":%d}`, poison), d.Payload, "payload kept")
	require.NotNil(t, d.SourceSeq)
	assert.Equal(t, int64(poison+1), *d.SourceSeq)
	assert.Contains(t, d.Error, "test_refuses_poison", "the error that stopped the parsed form")
	assert.Empty(t, d.OriginalSubject, "never replayed")
	assert.Empty(t, d.CorrelationID)
	assert.True(t, bytes.HasPrefix(d.HeaderBlock, []byte("NATS/1.0\r\n")), "the headers kept as bytes")
	assert.Contains(t, string(d.HeaderBlock), "Dlq-Correlation-Id: poison-row\r\n")
	assert.Contains(t, string(d.HeaderBlock), "X-Trace: 500\r\n")
	assert.Contains(t, d.Flags, "header_block_reencoded")
	assert.Contains(t, d.Delivery, fmt.Sprintf("DLQ #%d stored", poison+1))

	// One bad message cost its batch a few statements, not one per message.
	extra := testutil.ToFloat64(r.metrics.IsolationStatements)
	assert.Positive(t, extra)
	assert.LessOrEqual(t, extra, 2*10+2.0, "about 2·log2(1000) statements")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.metrics.RawForm.WithLabelValues("acme")))
	assert.Zero(t, testutil.ToFloat64(r.metrics.Unstorable))

	// The log line names it.
	line := findLog(t, logBuf.String(), "dead letter stored in raw form")
	assert.Equal(t, "acme", line["tenant"])
	assert.Equal(t, "poison-row", line["correlation_id"])
	assert.Equal(t, "m-500", line["msg_id"])
	assert.Contains(t, line["delivery"], fmt.Sprintf("DLQ #%d", poison+1))
	assert.Contains(t, line["err"], "test_refuses_poison")

	b.waitDrained(t)
}

func TestIngestMalformedHeaderBlockKeptRaw(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	r := b.start(t, IngestConfig{Watch: ws}, nil)
	raw := b.ns.DialRaw(t)

	block := []byte("NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.refund\r\nthis line has no colon\r\n" +
		"Dlq-Error: boom\r\nDlq-Error-Class: permanent\r\nX-Bin: \xff\xfe\r\n: empty name\r\nDlq-Original-Msg-Id: refund-9\r\n\r\n")
	garbage := []byte("garbage \xff\x00 with no version line and no end")
	for _, m := range []struct {
		hdr  []byte
		data string
	}{{block, `{"n":1}`}, {garbage, `{"n":2}`}, {nil, `{"n":3}`}} {
		_, err := raw.Publish("dlq.acme.orders.refund", m.hdr, []byte(m.data))
		require.NoError(t, err)
	}
	b.waitRows(t, 3)

	d, err := b.store.BySource(ctx, "DLQ", 1, "")
	require.NoError(t, err)
	assert.Equal(t, block, d.HeaderBlock, "the block exactly as NATS stored it")
	assert.Equal(t, "app.acme.orders.refund", d.OriginalSubject, "the lines around the bad one are read")
	assert.Equal(t, "boom", d.Error)
	assert.Equal(t, ClassPermanent, d.ErrorClass)
	assert.Equal(t, "refund-9", d.MsgID)
	assert.False(t, d.MsgIDDerived)
	assert.Contains(t, d.Flags, "header_block_unparsed")
	assert.Contains(t, d.Flags, "header_line_skipped")
	reasons := strings.Join(d.MalformedReasons, "\n")
	assert.Contains(t, reasons, `line 3 has no colon: "this line has no colon" skipped`)
	assert.Contains(t, reasons, `line 7 has an empty name`)
	hs, err := d.Headers()
	require.NoError(t, err)
	got, err := DecodeHeaders(hs)
	require.NoError(t, err)
	assert.Equal(t, []string{"\xff\xfe"}, got["X-Bin"], "binary values kept")
	assert.Len(t, got, 5, "every well-formed line")

	g, err := b.store.BySource(ctx, "DLQ", 2, "")
	require.NoError(t, err)
	assert.Equal(t, garbage, g.HeaderBlock)
	assert.Equal(t, []byte(`{"n":2}`), g.Payload)
	assert.Contains(t, strings.Join(g.MalformedReasons, "\n"), "does not start with")
	assert.Contains(t, strings.Join(g.MalformedReasons, "\n"), "not ended by an empty line")

	none, err := b.store.BySource(ctx, "DLQ", 3, "")
	require.NoError(t, err)
	assert.Nil(t, none.HeaderBlock, "no block sent, none kept")
	assert.Equal(t, []string{"missing:original_subject"}, none.Flags)
	assert.Equal(t, 2.0, testutil.ToFloat64(r.metrics.HeaderRereads), "the two blocks; the message sent with none is not read again")

	// A watched stream's message with such a block, given up on: the
	// advisory's original is read as stored too, and nothing stalls.
	_, err = raw.Publish("app.acme.orders.cancel", block, []byte(`{"order":7}`))
	require.NoError(t, err)
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "canceller", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	failingWorker(t, cons, 1, true)
	b.waitRows(t, 4)
	a, err := b.store.BySource(ctx, "ORDERS", 1, "canceller")
	require.NoError(t, err)
	assert.Equal(t, block, a.HeaderBlock)
	assert.True(t, a.MsgIDDerived, "Dlq-Original-Msg-Id is the publisher's, not read on the advisory path")
	assert.True(t, strings.HasPrefix(a.MsgID, "ORDERS:1@"), a.MsgID)
	assert.Contains(t, a.Flags, "upstream:dlq_headers")
	assert.Equal(t, []byte(`{"order":7}`), a.Payload)
	assert.Contains(t, a.Flags, "header_line_skipped")
	assert.NotContains(t, a.Flags, "header_block_unparsed", "the console read it from the stream itself")
}

func TestProducerIgnoresUpstreamDlqHeaders(t *testing.T) {
	t.Parallel()
	// The original came from an upstream client that set contract headers
	// itself: a principal to be re-checked, a class, an operation id, a
	// message id, in any case.
	orig := &nats.Msg{Subject: "app.acme.accounts.permission_grant", Data: []byte(`{"grant":"admin"}`), Header: nats.Header{
		HeaderPrincipal:       {"user:root"},
		"dlq-principal":       {"user:root-lower"},
		HeaderErrorClass:      {"policy"},
		HeaderOperationID:     {"op-forged"},
		HeaderOriginalMsgID:   {"forged-id"},
		HeaderOriginalSubject: {"admin.secrets"},
		HeaderTenant:          {"globex"},
		"Dlq-Replay-Of":       {"7"},
		"Nats-Rollup":         {"all"},
		"X-Trace":             {"t-1"},
	}}
	cases := []struct {
		name string
		f    Failure
		want map[string]string // contract header -> value; "" = absent
	}{
		{"ServiceLeavesThemEmpty", Failure{Err: errors.New("denied")}, map[string]string{
			HeaderPrincipal: "", HeaderErrorClass: "", HeaderOperationID: "", HeaderOriginalMsgID: "ORDERS:9",
			HeaderOriginalSubject: "app.acme.accounts.permission_grant", HeaderTenant: "acme",
		}},
		{"ServiceSetsThem", Failure{Err: errors.New("denied"), Principal: "user:alice", Class: ClassPolicy, OperationID: "op-1"}, map[string]string{
			HeaderPrincipal: "user:alice", HeaderErrorClass: "policy", HeaderOperationID: "op-1",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewMessage("dlq", "acme", "accounts.permission_grant", orig, Origin{Stream: "ORDERS", Seq: 9}, tc.f)
			require.NoError(t, err)
			for k, v := range tc.want {
				if v == "" {
					assert.Empty(t, m.Header.Values(k), k)
				} else {
					assert.Equal(t, []string{v}, m.Header.Values(k), k)
				}
			}
			// Kept, renamed, never read as the contract.
			assert.Equal(t, []string{"user:root"}, m.Header.Values("Upstream-Dlq-Principal"))
			assert.Equal(t, []string{"user:root-lower"}, m.Header.Values("Upstream-dlq-principal"))
			assert.Equal(t, []string{"7"}, m.Header.Values("Upstream-Dlq-Replay-Of"))
			assert.Empty(t, m.Header.Values("dlq-principal"))
			assert.Empty(t, m.Header.Values("Nats-Rollup"))
			assert.Equal(t, []string{"t-1"}, m.Header.Values("X-Trace"))
			for k := range m.Header {
				if strings.HasPrefix(strings.ToLower(k), "dlq-") {
					assert.Contains(t, contractFields, k, "only contract headers the helper set")
				}
			}
		})
	}

	t.Run("Ingested", func(t *testing.T) {
		b := setup(t)
		b.start(t, IngestConfig{}, nil)
		m, err := NewMessage("dlq", "acme", "accounts.permission_grant", orig, Origin{Stream: "ORDERS", Seq: 9}, Failure{Err: errors.New("denied")})
		require.NoError(t, err)
		publish(t, b.js, m)
		b.waitRows(t, 1)
		d, err := b.store.BySource(context.Background(), "DLQ", 1, "")
		require.NoError(t, err)
		assert.Empty(t, d.Principal, "the upstream principal is not the one re-checked")
		assert.Equal(t, ClassUnclassified, d.ErrorClass)
		assert.Empty(t, d.OperationID)
		assert.Equal(t, "ORDERS:9", d.MsgID)
		assert.Equal(t, "app.acme.accounts.permission_grant", d.OriginalSubject)
		assert.NotContains(t, d.Flags, "mismatch:tenant")
	})
}

func TestIngestSourceKeySurvivesStreamRecreate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws, HealthEvery: 100 * time.Millisecond}, nil)

	for i := range 3 {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: fmt.Appendf(nil, "old %d", i)})
	}
	b.waitRows(t, 3)

	// The DLQ stream is deleted (its consumer with it); the console makes
	// both again, and the new stream numbers from 1 again.
	require.NoError(t, b.js.DeleteStream(ctx, "DLQ"))
	wait.Until(t, "the DLQ stream and its consumer made again", time.Minute, func() bool {
		_, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
		return err == nil
	})
	for i := range 3 {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: fmt.Appendf(nil, "new %d", i)})
	}
	b.waitRows(t, 6)
	assert.Equal(t, 2, countRows(t, b.db.Pool, "source_stream = 'DLQ' AND source_seq = 1"), "old and new seq 1 are both rows")
	assert.Equal(t, 3, countRows(t, b.db.Pool, "payload LIKE 'new %'"))
	assert.Equal(t, 6, countRows(t, b.db.Pool, "source_key IS NOT NULL AND delivery LIKE 'DLQ #% stored %'"))

	// A watched stream made again: its new messages' advisories are rows too.
	giveUp := func(payload string) {
		publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte(payload)})
		cons, err := b.js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
		require.NoError(t, err)
		failingWorker(t, cons, 1, true)
	}
	giveUp("first life")
	b.waitRows(t, 7)
	require.NoError(t, b.js.DeleteStream(ctx, "ORDERS"))
	b.createStream(t, ordersStream)
	giveUp("second life")
	b.waitRows(t, 8)
	assert.Equal(t, 2, countRows(t, b.db.Pool, "source_stream = 'ORDERS' AND source_seq = 1 AND source_consumer = 'refunder'"))
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'second life'"))

	t.Run("UnreadableMetadata", func(t *testing.T) {
		// Two deliveries whose metadata cannot be read: both stored, flagged,
		// with no made-up sequence.
		bad := errors.New("reply subject is not a JetStream ack subject")
		var recs []Record
		for i := range 2 {
			recs = append(recs, ParseDLQ("dlq", Received{Subject: "dlq.acme.x", Stream: "DLQ", Time: time.Now(), MetadataErr: bad, Data: fmt.Appendf(nil, "u%d", i)}))
		}
		res, err := b.store.Insert(ctx, recs)
		require.NoError(t, err)
		assert.Len(t, res.Inserted, 2)
		for i := range 2 {
			d := b.row(t, "payload = $1", fmt.Sprintf("u%d", i))
			assert.Nil(t, d.SourceSeq, "no sequence rather than 0")
			assert.Contains(t, d.Flags, "metadata_unreadable")
			assert.Contains(t, d.Delivery, "unreadable delivery")
			assert.True(t, d.MsgIDDerived)
		}
	})
}

func TestIngestImplausibleValuesFlagged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)

	send := func(n int, h nats.Header) {
		h.Set(HeaderOriginalSubject, "app.acme.orders.refund")
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders.refund", Header: h, Data: fmt.Appendf(nil, "%d", n)})
	}
	send(1, nats.Header{HeaderFirstFailedAt: {"0000-01-01T00:00:00Z"}, HeaderLastFailedAt: {"9999-12-31T23:59:59Z"}, HeaderAttempts: {"-3"}})
	send(2, nats.Header{HeaderFirstFailedAt: {"2026-01-02T00:00:00Z"}, HeaderLastFailedAt: {"2026-01-01T00:00:00Z"}, HeaderAttempts: {"99999999999"}})
	send(3, nats.Header{HeaderAttempts: {"500000"}})
	send(4, nats.Header{HeaderFirstFailedAt: {time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, HeaderAttempts: {"3"}})
	// A forged advisory: raised in year 1, after a trillion deliveries.
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.void", Data: []byte("order 9")})
	adv := fmt.Sprintf(`{"type":"io.nats.jetstream.advisory.v1.max_deliver","id":"x","timestamp":"0001-01-01T00:00:00Z","stream":"ORDERS","consumer":"c1","stream_seq":1,"deliveries":%d}`, uint64(1e12))
	_, err := b.js.Publish(ctx, AdvisoryMaxDeliveries+".ORDERS.c1", []byte(adv))
	require.NoError(t, err)
	b.waitRows(t, 5)

	get := func(n int) DeadLetter { return b.row(t, "payload = $1", fmt.Sprint(n)) }
	d := get(1)
	assert.Subset(t, d.Flags, []string{"implausible:first_failed_at", "implausible:last_failed_at", "implausible:attempts"})
	require.NotNil(t, d.FirstFailedAt)
	assert.Equal(t, 0, d.FirstFailedAt.Year(), "stored as sent")
	require.NotNil(t, d.LastFailedAt)
	assert.Equal(t, 9999, d.LastFailedAt.Year())
	assert.Nil(t, d.Attempts, "a negative count is not a count")
	assert.Contains(t, strings.Join(d.MalformedReasons, "\n"), `Dlq-Attempts "-3" is negative`)

	d = get(2)
	assert.Subset(t, d.Flags, []string{"implausible:first_failed_at", "implausible:attempts"})
	assert.Nil(t, d.Attempts)
	assert.Contains(t, strings.Join(d.MalformedReasons, "\n"), "is after Dlq-Last-Failed-At")

	d = get(3)
	assert.Equal(t, []string{"implausible:attempts"}, d.Flags)
	require.NotNil(t, d.Attempts)
	assert.Equal(t, int32(500000), *d.Attempts, "stored as sent, flagged")

	d = get(4)
	assert.Empty(t, d.Flags, "plausible values raise nothing")

	a := b.row(t, "source_kind = 'advisory'")
	assert.Subset(t, a.Flags, []string{"implausible:advisory_time", "implausible:attempts"})
	assert.WithinDuration(t, time.Now(), a.DeadLetteredAt, time.Minute, "dead-lettered when JetStream captured it, not when it claims")
	assert.Equal(t, "acme", a.Tenant)
	assert.Equal(t, []byte("order 9"), a.Payload)
}

// findLog returns the first JSON log line in text whose message starts
// with msg, its values as text.
func findLog(t *testing.T, text, msg string) map[string]string {
	t.Helper()
	for line := range strings.SplitSeq(text, "\n") {
		var fields map[string]any
		if json.Unmarshal([]byte(line), &fields) != nil || !strings.HasPrefix(fmt.Sprint(fields["msg"]), msg) {
			continue
		}
		out := map[string]string{}
		for k, v := range fields {
			out[k] = fmt.Sprint(v)
		}
		return out
	}
	t.Fatalf("no log line %q in:\n%s", msg, text)
	return nil
}
