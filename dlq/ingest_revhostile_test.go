package dlq

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Review (rev-hostile): a dead letter whose subject is not valid UTF-8
// (NATS takes any bytes but white space in a subject) and whose header
// block the NATS client reads in a length other than its own (here: no
// blank after the colon, which many raw clients write) is read again from
// the stream. The JSON API gives the subject back with U+FFFD for the bad
// byte, rereadHeaderBlock takes the mismatch for "the stream was made
// again", and the dead letter is stored without any of its headers
// (header_block_unavailable): original subject, message id, error gone.
func TestReviewNonUTF8SubjectLosesReadAgainHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.start(t, IngestConfig{}, nil)
	raw := b.ns.DialRaw(t)

	block := []byte("NATS/1.0\r\nDlq-Original-Subject:app.acme.orders.refund\r\nDlq-Original-Msg-Id:refund-9\r\nDlq-Error:boom\r\n\r\n")
	_, err := raw.Publish("dlq.acme.orders.\xff", block, []byte(`{"n":1}`))
	require.NoError(t, err)
	_, err = raw.Publish("dlq.acme.orders.ok", block, []byte(`{"n":2}`)) // control: a valid subject
	require.NoError(t, err)
	b.waitRows(t, 2)

	ok, err := b.store.BySource(ctx, "DLQ", 2, "")
	require.NoError(t, err)
	assert.Equal(t, "app.acme.orders.refund", ok.OriginalSubject, "control")

	d, err := b.store.BySource(ctx, "DLQ", 1, "")
	require.NoError(t, err)
	assert.Contains(t, d.Flags, "not_utf8:subject")
	assert.NotContains(t, d.Flags, "header_block_unavailable", "the stream holds this very message; its headers must be kept")
	assert.Equal(t, block, d.HeaderBlock, "the block exactly as stored")
	assert.Equal(t, "app.acme.orders.refund", d.OriginalSubject)
	assert.Equal(t, "refund-9", d.MsgID)
	assert.Equal(t, "boom", d.Error)
}

// Review (rev-hostile): an advisory's original whose subject is not valid
// UTF-8 is read through the JSON API, which gives it with U+FFFD: the row's
// subject and original subject (where a replay publishes) are not the bytes
// the original was published to, and nothing says so (no not_utf8 flag).
func TestReviewAdvisoryOriginalNonUTF8SubjectFlagged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)
	raw := b.ns.DialRaw(t)
	_, err := raw.Publish("app.acme.orders.\xff", nil, []byte(`{"order":1}`))
	require.NoError(t, err)
	adv := `{"type":"io.nats.jetstream.advisory.v1.terminated","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
		`","stream":"ORDERS","consumer":"c1","stream_seq":1,"deliveries":1}`
	_, err = b.js.Publish(context.Background(), AdvisoryTerminated+".ORDERS.c1", []byte(adv))
	require.NoError(t, err)
	b.waitRows(t, 1)
	a := b.row(t, "source_kind = 'advisory'")
	t.Logf("subject %q original_subject %q flags %v", a.Subject, a.OriginalSubject, a.Flags)
	assert.True(t, a.OriginalSubject == "app.acme.orders.\xff" || strings.Contains(strings.Join(a.Flags, ","), "not_utf8"),
		"either the exact subject or a flag saying it is not: a replay would publish to %q", a.OriginalSubject)
}

// Review (rev-hostile): subjects with wildcard tokens and an empty tenant.
// A wildcard names no tenant (* is the console's every tenant): stored
// under tenant unknown, flagged invalid:tenant; a wildcard in the item
// type is flagged invalid:item_type (fix-hostile). JetStream refuses
// subjects with an empty token (no stream's subjects match them).
func TestReviewWildcardAndEmptySubjects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.start(t, IngestConfig{}, nil)
	raw := b.ns.DialRaw(t)
	want := map[string]struct{ tenant, flag string }{
		"dlq.*.orders": {UnknownTenant, "invalid:tenant"},
		"dlq.>":        {UnknownTenant, "invalid:tenant"},
		"dlq.acme.>":   {"acme", "invalid:item_type"},
		"dlq.acme.*":   {"acme", "invalid:item_type"},
		"dlq.acme":     {"acme", "missing:item_type"},
	}
	for s := range want {
		_, err := raw.Publish(s, nil, []byte(s))
		require.NoError(t, err, s)
	}
	for _, s := range []string{"dlq..orders", "dlq.acme..x"} {
		_, err := raw.Publish(s, nil, []byte(s))
		require.Error(t, err, "JetStream stored %q", s)
	}
	b.waitRows(t, len(want))
	rows, err := b.db.Pool.Query(context.Background(), `SELECT subject, tenant, flags FROM dead_letters ORDER BY id`)
	require.NoError(t, err)
	seen := 0
	for rows.Next() {
		var s, tn string
		var f []string
		require.NoError(t, rows.Scan(&s, &tn, &f))
		w, ok := want[s]
		require.True(t, ok, "stored %q", s)
		assert.Equal(t, w.tenant, tn, s)
		assert.Contains(t, f, w.flag, s)
		seen++
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, len(want), seen)
}

// Review (rev-hostile): every distinct item type (any subject tokens after
// the tenant) is a new series of quarantine_ingested_total kept in the
// ingester's memory for good: a producer who may publish to dlq.<tenant>.>
// grows the console's memory and every scrape without bound.
func TestReviewItemTypesGrowMetricSeriesUnbounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, IngestConfig{}, nil)
	const n = 500
	for i := range n {
		_, err := b.js.PublishMsgAsync(&nats.Msg{Subject: fmt.Sprintf("dlq.acme.%s", long(fmt.Sprintf("t%d", i), 200)), Data: []byte("x")})
		require.NoError(t, err)
	}
	select {
	case <-b.js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("publishing did not complete")
	}
	b.waitRows(t, n)
	b.waitDrained(t)
	series := testutil.CollectAndCount(r.metrics.Ingested)
	assert.Equal(t, MetricItemTypes+1, series, "series in memory after %d dead letters of distinct item types: the first %d and %q", n, MetricItemTypes, OtherLabel)
	assert.Equal(t, float64(n-MetricItemTypes), testutil.ToFloat64(r.metrics.Ingested.WithLabelValues("acme", OtherLabel, string(ClassUnclassified))))
	var b2 labelBound // tenants likewise, item types of the tenants past the bound under other too
	for i := range MetricTenants + 5 {
		tenant, itemType := b2.labels(fmt.Sprint("t", i), "x")
		if i < MetricTenants {
			assert.Equal(t, [2]string{fmt.Sprint("t", i), "x"}, [2]string{tenant, itemType})
		} else {
			assert.Equal(t, [2]string{OtherLabel, OtherLabel}, [2]string{tenant, itemType})
		}
	}
	assert.Equal(t, "t0", b2.tenant("t0"))
	assert.Equal(t, OtherLabel, b2.tenant("t-new"))
}

// Review (rev-hostile): a dead letter near the server's max_payload whose
// header block has to be read again from the stream (here: lines without
// a blank after the colon): the JSON API's answer carries the payload in
// base64, a third larger than the message. Is the block read, or is the
// dead letter stored without its headers?
func TestReviewLargeDeadLetterReadAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.start(t, IngestConfig{}, nil)
	raw := b.ns.DialRaw(t)
	block := []byte("NATS/1.0\r\nDlq-Original-Subject:app.acme.orders.refund\r\nDlq-Original-Msg-Id:big-1\r\n\r\n")
	data := []byte(strings.Repeat("p", 7<<20))
	_, err := raw.Publish("dlq.acme.orders.refund", block, data)
	require.NoError(t, err)
	b.waitRows(t, 1)
	d, err := b.store.BySource(ctx, "DLQ", 1, "")
	require.NoError(t, err)
	t.Logf("flags %v reasons %q rereads %v", d.Flags, d.MalformedReasons, testutil.ToFloat64(r.metrics.HeaderRereads))
	assert.Equal(t, "big-1", d.MsgID)
	assert.Equal(t, block, d.HeaderBlock)
	assert.Len(t, d.Payload, len(data))
}

// Review (rev-hostile): how many header bytes JetStream takes, and a
// block of tens of thousands of values under contract names, each
// invalid: the dead letter is stored with every value (the stack whole),
// flagged, not lost.
func TestReviewHugeHeaderBlocks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.start(t, IngestConfig{}, nil)
	raw := b.ns.DialRaw(t)
	var many strings.Builder
	many.WriteString("NATS/1.0\r\n")
	n := 0
	for many.Len() < 60<<10 {
		many.WriteString("Dlq-Stack:\xff\r\n")
		n++
	}
	many.WriteString("\r\n")
	_, err := raw.Publish("dlq.acme.many", []byte(many.String()), []byte("y"))
	require.NoError(t, err)
	b.waitRows(t, 1)
	d := b.row(t, "subject = 'dlq.acme.many'")
	assert.Contains(t, d.Flags, "not_utf8:stack")
	assert.Equal(t, n, strings.Count(d.Stack, "\uFFFD"), "every value of the stack kept, one line each")
}
