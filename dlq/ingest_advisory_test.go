package dlq

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestIngestAdvisoryJSONPostgresRefusesKept: anyone who may publish on an
// advisory subject can send JSON that Go reads and PostgreSQL's jsonb
// refuses: a lone surrogate escape ("\ud800", which Go reads as U+FFFD)
// or a number beyond numeric's range, in a field the console does not
// read. Such an advisory is stored in its parsed form, the JSON kept with
// those values replaced and flagged, never in the raw form, which drops
// the advisory and its error.
func TestIngestAdvisoryJSONPostgresRefusesKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)
	_, err := b.js.Publish(ctx, "app.acme.orders.refund", []byte(`{"amount":10}`))
	require.NoError(t, err)

	for i, body := range []string{
		`{"type":"io.nats.jetstream.advisory.v1.terminated","stream":"ORDERS","consumer":"refunder","stream_seq":1,"deliveries":2,"reason":"\ud800 closed"}`,
		`{"type":"io.nats.jetstream.advisory.v1.terminated","stream":"ORDERS","consumer":"voider","stream_seq":1,"deliveries":2,"reason":"closed","x":1e200000,"y":[1e-20000]}`,
		`{"type":"io.nats.jetstream.advisory.v1.terminated","stream":"ORDERS","consumer":"paired","stream_seq":1,"deliveries":2,"reason":"\ud83d\ude00 \\ud800"}`,
	} {
		consumer := []string{"refunder", "voider", "paired"}[i]
		_, err = b.js.Publish(ctx, AdvisoryTerminated+".ORDERS."+consumer, []byte(body))
		require.NoError(t, err)
	}
	b.waitRows(t, 3)

	d, err := b.store.BySource(ctx, "ORDERS", 1, "refunder")
	require.NoError(t, err)
	assert.NotContains(t, d.Flags, "raw_form")
	assert.Contains(t, d.Flags, "not_storable:advisory")
	assert.Equal(t, "acme", d.Tenant)
	assert.Contains(t, d.Error, "\uFFFD closed")
	assert.Contains(t, string(d.Advisory), "\"reason\": \"\uFFFD closed\"")

	v, err := b.store.BySource(ctx, "ORDERS", 1, "voider")
	require.NoError(t, err)
	assert.NotContains(t, v.Flags, "raw_form")
	assert.Contains(t, v.Flags, "not_storable:advisory")
	assert.Contains(t, string(v.Advisory), `"x": "1e200000"`, "the number kept as text")
	assert.Contains(t, string(v.Advisory), `"y": ["1e-20000"]`)
	assert.Equal(t, []byte(`{"amount":10}`), v.Payload)

	p, err := b.store.BySource(ctx, "ORDERS", 1, "paired")
	require.NoError(t, err)
	assert.NotContains(t, p.Flags, "raw_form")
	assert.NotContains(t, p.Flags, "not_storable:advisory", "a surrogate pair and an escaped backslash are JSON PostgreSQL takes")
	assert.Contains(t, string(p.Advisory), `"reason": "😀 \\ud800"`)
}

// TestAdvisoryOriginalReplacedAfterStreamRecreate: an advisory is raised
// while the console is down; the watched stream is then deleted and made
// again (its sequences restart at 1) and takes another tenant's message at
// the advisory's sequence. The console, back, must not store that message
// as the dead letter (replaying it would send an innocent message again):
// it stores what the advisory says, flagged original_replaced.
func TestAdvisoryOriginalReplacedAfterStreamRecreate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil).stop() // makes DLQ_ADVISORIES; the console is down from here on

	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("POISON refund 1"), Header: nats.Header{HeaderNatsMsgID: {"refund-1"}}})
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	failingWorker(t, cons, 1, true)
	advisories, err := b.js.Stream(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	var advisory *jetstream.RawStreamMsg
	wait.Until(t, "the advisory captured", time.Minute, func() bool {
		advisory, err = advisories.GetLastMsgForSubject(ctx, AdvisoryTerminated+".ORDERS.refunder")
		return err == nil
	})

	require.NoError(t, b.js.DeleteStream(ctx, "ORDERS"))
	b.createStream(t, ordersStream)
	// The replacement must be stored later than the advisory by more than
	// the clock allowance, as it is when a person re-creates a stream.
	wait.Until(t, "the clock allowance passed", time.Minute, func() bool {
		return time.Since(advisory.Time) > OriginalClockAllowance
	})
	publish(t, b.js, &nats.Msg{Subject: "app.globex.orders.pay", Data: []byte("INNOCENT payment"), Header: nats.Header{HeaderNatsMsgID: {"pay-9"}}})

	b.start(t, IngestConfig{Watch: ws}, nil)
	b.waitRows(t, 1)
	d := b.row(t, "source_stream = 'ORDERS' AND source_seq = 1")
	assert.Contains(t, d.Flags, "original_replaced")
	assert.Contains(t, strings.Join(d.MalformedReasons, "\n"), "the stream was deleted and made again")
	assert.True(t, d.PayloadUnavailable)
	assert.Empty(t, d.Payload, "the innocent payload is not the dead letter's")
	assert.Equal(t, "unknown", d.Tenant, "not the innocent message's tenant")
	assert.NotEqual(t, "pay-9", d.MsgID)
	assert.True(t, d.MsgIDDerived)
	assert.Equal(t, "ORDERS:1@"+advisory.Time.UTC().Format(time.RFC3339Nano), d.MsgID)
	assert.Equal(t, ClassTerminated, d.ErrorClass)
	assert.Contains(t, d.Error, "schema: field amount missing")
	assert.Zero(t, countRows(t, b.db.Pool, "payload = 'INNOCENT payment' OR msg_id = 'pay-9' OR tenant = 'globex'"))
}

// TestAdvisoryIgnoresUpstreamDlqHeaders: whoever publishes to a watched
// subject sets the original's headers. A poison message carrying the
// contract's Dlq-* headers (a principal for a revalidate replay to
// re-check, another message's id for a replay to publish under, an
// operation id, failure times) must not give them to the dead letter its
// advisory makes: they stay among its headers, flagged.
func TestAdvisoryIgnoresUpstreamDlqHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)

	forged := nats.Header{
		HeaderNatsMsgID:       {"refund-7"},
		HeaderPrincipal:       {"user:admin"},
		HeaderOriginalMsgID:   {"victim-42"},
		HeaderOperationID:     {"op-of-someone-else"},
		HeaderCorrelationID:   {"corr-forged"},
		HeaderFirstFailedAt:   {"2001-01-01T00:00:00Z"},
		HeaderLastFailedAt:    {"2001-01-02T00:00:00Z"},
		HeaderReplayOf:        {"999999"}, // names no dead letter: no confirmed replay
		"X-Trace":             {"t-1"},
		"Dlq-Original-Msg-ID": {"victim-43"}, // another spelling
	}
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("POISON"), Header: forged})
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("POISON, no id"), Header: nats.Header{HeaderOriginalMsgID: {"victim-42"}, HeaderOperationID: {"op-x"}}})
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	failingWorker(t, cons, 2, true)
	b.waitRows(t, 2)

	d := b.row(t, "source_stream = 'ORDERS' AND source_seq = 1")
	assert.Equal(t, "refund-7", d.MsgID, "the message's own Nats-Msg-Id, never Dlq-Original-Msg-Id")
	assert.False(t, d.MsgIDDerived)
	assert.Empty(t, d.Principal, "the publisher's principal is not the one a revalidate replay re-checks")
	assert.Empty(t, d.OperationID, "only a confirmed console replay's operation id is taken")
	assert.Empty(t, d.CorrelationID)
	assert.Nil(t, d.FirstFailedAt)
	assert.Nil(t, d.LastFailedAt)
	assert.Nil(t, d.ReplayOf)
	assert.Equal(t, "acme", d.Tenant)
	assert.Contains(t, d.Flags, "upstream:dlq_headers")
	reasons := strings.Join(d.MalformedReasons, "\n")
	assert.Contains(t, reasons, "Dlq-First-Failed-At, Dlq-Last-Failed-At, Dlq-Original-Msg-Id, Dlq-Principal, set by whoever published it")
	assert.Contains(t, reasons, "Dlq-Operation-Id, Dlq-Correlation-Id, which only the console's own replays send")
	hs, err := d.Headers()
	require.NoError(t, err)
	kept, err := DecodeHeaders(hs)
	require.NoError(t, err)
	assert.Equal(t, []string{"user:admin"}, kept[HeaderPrincipal], "kept as a stored header")
	assert.Equal(t, []string{"op-of-someone-else"}, kept[HeaderOperationID])

	n := b.row(t, "source_stream = 'ORDERS' AND source_seq = 2")
	assert.True(t, n.MsgIDDerived, "no Nats-Msg-Id: derived, not the victim's")
	assert.True(t, strings.HasPrefix(n.MsgID, "ORDERS:2@"), n.MsgID)
	assert.Empty(t, n.OperationID)
	assert.Contains(t, n.Flags, "upstream:dlq_headers")
	assert.Zero(t, countRows(t, b.db.Pool, "msg_id LIKE 'victim%' OR coalesce(principal, '') <> '' OR coalesce(operation_id, '') <> ''"))
}

// TestIngestAdvisoryNotNakdForNobody: an advisory whose original cannot
// be read (a failure other than "gone") is nak'd to come again, but not
// when its consumer was made again meanwhile (its incarnation retired):
// the nak would reach the consumer made again. That one delivers it again
// while its stream holds it (or when that cannot be read, as here), so it
// is neither nak'd nor stored now: stored flagged original_unreadable, its
// redelivery (with the original) would be deduplicated away
// (TestRetiredAdvisoryKeepsItsOriginal). Only an advisory no longer
// in its stream is stored at once, flagged.
func TestIngestAdvisoryNotNakdForNobody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	// The original cannot be read: the ingester's connection is closed.
	nc, js := b.ns.Connect(t)
	nc.Close()
	in := NewIngester(IngestConfig{Watch: ws}, js, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	inc := &incarnation{stream: "DLQ_ADVISORIES"}
	inc.retire()
	sub, err := b.nc.SubscribeSync(nats.NewInbox()) // a message as the client delivers it, bound to a subscription
	require.NoError(t, err)
	m := pulledMsg{inc: inc, received: time.Now(), m: &nats.Msg{Sub: sub,
		Subject: AdvisoryTerminated + ".ORDERS.refunder",
		Reply:   fmt.Sprintf("$JS.ACK.DLQ_ADVISORIES.quarantine-ingest.1.7.7.%d.0", time.Now().UnixNano()),
		Data:    []byte(`{"type":"io.nats.jetstream.advisory.v1.terminated","stream":"ORDERS","consumer":"refunder","stream_seq":1,"deliveries":2}`),
	}}
	items := make(chan item, 1)
	in.handleAdvisory(ctx, m, items)
	assert.Empty(t, items, "left to the consumer made again")
	assert.Zero(t, countRows(t, b.db.Pool, "source_stream = 'ORDERS'"))
}
