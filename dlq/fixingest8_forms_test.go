package dlq

import (
	"context"
	"crypto/sha256"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixIngest8SweptAdvisoryPositionFormNamesTheOriginal: a captured
// advisory acked without a row, whose original PostgreSQL refuses in
// every form, is stored by the sweep in its position form after
// sweepHeldTries sweeps. Its reason names the original's place (ORDERS
// #1: the payload and headers the row lacks), not the advisory's
// (DLQ_ADVISORIES holds the advisory JSON), which it gives besides; its
// message id is the original's derived one, as the parsed form has it.
func TestFixIngest8SweptAdvisoryPositionFormNamesTheOriginal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{Watch: b.watchOrders(t)})
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("hostile")})
	orders, err := b.js.Stream(ctx, "ORDERS")
	require.NoError(t, err)
	orig, err := orders.GetMsg(ctx, 1)
	require.NoError(t, err)
	adv := `{"type":"io.nats.jetstream.advisory.v1.terminated","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
		`","stream":"ORDERS","consumer":"c1","stream_seq":1,"deliveries":2}`
	publish(t, b.js, &nats.Msg{Subject: AdvisoryTerminated + ".ORDERS.c1", Data: []byte(adv)})
	b.peek(t, "DLQ_ADVISORIES", 1) // acked without a row
	refuseHostile(t, b)

	sweepUntil(t, in, "DLQ_ADVISORIES", sweepHeldTries, func() bool {
		return countRows(t, b.db.Pool, "'content_refused' = ANY(flags)") == 1
	})
	d := b.row(t, "'content_refused' = ANY(flags)")
	require.Equal(t, "ORDERS", d.SourceStream)
	sum := sha256.Sum256([]byte("hostile"))
	require.Equal(t, sum[:], d.PayloadSHA256)
	reasons := strings.Join(d.MalformedReasons, "\n")
	assert.Contains(t, reasons, "nats stream get ORDERS 1", "the original's place")
	assert.NotContains(t, reasons, "nats stream get DLQ_ADVISORIES", "the advisory stream holds the advisory JSON")
	assert.Contains(t, reasons, "the advisory that reported it is DLQ_ADVISORIES #1")
	assert.Equal(t, DerivedMsgID("ORDERS", 1, orig.Time), d.MsgID, "the original's derived id")
}

// TestFixIngest8DerivedIDSameInEveryForm: the raw and the position form of
// a record derive their message id from the time the parsed form's was
// derived from: an advisory's original's stored time, not the advisory's.
func TestFixIngest8DerivedIDSameInEveryForm(t *testing.T) {
	t.Parallel()
	capturedAt := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	storedAt := capturedAt.Add(-time.Minute)
	w := WatchStream{Name: "ORDERS", Template: []string{"*", "{tenant}", "{item_type}"}}
	adv := Advisory{Type: "io.nats.jetstream.advisory.v1.terminated", Timestamp: capturedAt, Stream: "ORDERS", Consumer: "c1", StreamSeq: 7, Deliveries: 2}
	via := Received{Subject: AdvisoryTerminated + ".ORDERS.c1", Stream: "DLQ_ADVISORIES", Seq: 3, Time: capturedAt}
	for _, tc := range []struct {
		name string
		orig *Original
		want string
	}{
		{"OriginalTaken", &Original{Subject: "app.acme.orders.refund", Data: []byte("x"), Time: storedAt}, DerivedMsgID("ORDERS", 7, storedAt)},
		{"OriginalGone", nil, DerivedMsgID("ORDERS", 7, capturedAt)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := ParseAdvisory(w, adv, tc.orig, []byte("{}"), via)
			require.True(t, r.MsgIDDerived)
			require.Equal(t, tc.want, r.MsgID)
			cause := errors.New("refused")
			assert.Equal(t, tc.want, RawForm(r, cause).MsgID)
			assert.Equal(t, tc.want, contentRefusedForm(r, cause, "on its delivery 5", "DLQ_ADVISORIES", 3).MsgID)
		})
	}
}

// TestFixIngest8PositionFormNamesWhereTheContentIs: the command a position
// form's reason gives reads the message whose payload and headers the row
// lacks: the delivery's place for a DLQ message and for an advisory
// without its original, the original's for an advisory that took it.
func TestFixIngest8PositionFormNamesWhereTheContentIs(t *testing.T) {
	t.Parallel()
	w := WatchStream{Name: "ORDERS", Template: []string{"*", "{tenant}", "{item_type}"}}
	now := time.Now().UTC()
	adv := Advisory{Type: "io.nats.jetstream.advisory.v1.terminated", Timestamp: now, Stream: "ORDERS", Consumer: "c1", StreamSeq: 7, Deliveries: 2}
	via := Received{Subject: AdvisoryTerminated + ".ORDERS.c1", Stream: "DLQ_ADVISORIES", Seq: 3, Time: now}
	for _, tc := range []struct {
		name      string
		rec       Record
		want, not string
	}{
		{"DeadLetter", ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Data: []byte("x"), Stream: "DLQ", Seq: 4, Time: now}),
			"(nats stream get DLQ 4)", ""},
		{"AdvisoryWithItsOriginal", ParseAdvisory(w, adv, &Original{Subject: "app.acme.orders.refund", Data: []byte("x"), Time: now}, []byte("{}"), via),
			"(nats stream get ORDERS 7; the advisory that reported it is DLQ_ADVISORIES #3)", "nats stream get DLQ_ADVISORIES"},
		{"AdvisoryWithoutItsOriginal", ParseAdvisory(w, adv, nil, []byte("{}"), via),
			"(nats stream get DLQ_ADVISORIES 3)", "nats stream get ORDERS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := contentRefusedForm(tc.rec, errors.New("refused"), "in 5 sweeps running", tc.rec.Delivery[:strings.Index(tc.rec.Delivery, " #")],
				mustSeq(t, tc.rec.Delivery))
			reasons := strings.Join(m.MalformedReasons, "\n")
			assert.Contains(t, reasons, tc.want)
			if tc.not != "" {
				assert.NotContains(t, reasons, tc.not)
			}
		})
	}
}

// mustSeq is the sequence a record's Delivery names ("S #n stored ...").
func mustSeq(t *testing.T, delivery string) uint64 {
	t.Helper()
	rest := delivery[strings.Index(delivery, " #")+2:]
	n, err := strconv.ParseUint(rest[:strings.IndexByte(rest, ' ')], 10, 64)
	require.NoError(t, err)
	return n
}
