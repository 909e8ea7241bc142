package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev42ADeadLetterThatPanicsTheParserIsStoredAndIngestGoesOn: no
// input is known to panic the parser (it is fuzzed), but one that did
// stopped the ingest process, and every process that took the message
// after it, at every redelivery. A dead letter the parser fails on is
// stored in its raw form (its bytes kept, never replayed) in tenant
// unknown, flagged parse_failed, and acked; the dead letters around it
// are stored as ever, and the ingester keeps running.
func TestRev42ADeadLetterThatPanicsTheParserIsStoredAndIngestGoesOn(t *testing.T) {
	const poison = "dlq.acme.orders.poison"
	fault := func(m Received) {
		if m.Subject == poison {
			var none map[string]int
			none["the parser's bug"]++ // a nil map write: a runtime panic, as a real bug would be
		}
	}
	parseFault.Store(&fault)
	t.Cleanup(func() { parseFault.Store(nil) })

	b := setup(t)
	ctx := context.Background()
	b.start(t, IngestConfig{}, nil)
	for i, subject := range []string{"dlq.acme.orders.refund", poison, "dlq.acme.orders.refund"} {
		_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Header: nats.Header{
			HeaderOriginalSubject: {"app.acme.orders.refund"}, HeaderError: {"boom"}, "X-Keep": {"kept"},
		}, Data: []byte{'{', byte('0' + i), '}'}})
		require.NoError(t, err)
	}
	b.waitRows(t, 3)

	d, err := b.store.BySource(ctx, "DLQ", 2, "")
	require.NoError(t, err)
	assert.Equal(t, UnknownTenant, d.Tenant)
	assert.Contains(t, d.Flags, "parse_failed")
	assert.Contains(t, d.Flags, "raw_form")
	assert.Contains(t, d.Error, "stored in raw form: the parser failed on it: assignment to entry in nil map")
	assert.Contains(t, strings.Join(d.MalformedReasons, "\n"), "parse_survive_rev42_test.go", "where it failed, for the bug report")
	assert.Equal(t, []byte("{1}"), d.Payload)
	assert.Contains(t, string(d.HeaderBlock), "X-Keep: kept")
	assert.Empty(t, d.OriginalSubject, "a raw form is never replayed")
	for _, seq := range []uint64{1, 3} {
		d, err := b.store.BySource(ctx, "DLQ", seq, "")
		require.NoError(t, err)
		assert.Equal(t, "acme", d.Tenant)
		assert.Equal(t, "app.acme.orders.refund", d.OriginalSubject)
	}

	// Acked: nothing comes again, and the ingester stores what follows.
	_, err = b.js.PublishMsg(ctx, &nats.Msg{Subject: "dlq.acme.orders.refund", Header: nats.Header{HeaderOriginalSubject: {"app.acme.orders.refund"}}, Data: []byte("{3}")})
	require.NoError(t, err)
	b.waitRows(t, 4)
	wait.Until(t, "the ack floor past all four", time.Minute, func() bool {
		info := b.consumerInfo(t)
		return info.AckFloor.Stream == 4 && info.NumAckPending == 0
	})
	assert.Equal(t, 4, countRows(t, b.db.Pool, "true"))
	assert.Zero(t, b.consumerInfo(t).NumRedelivered, "the poison was acked at once, not delivered again")
}

// TestRev42ParserPanicOnAnImplausibleStoredTimeIsStorable: a server whose
// clock was reset stores a dead letter in 1990; the parser files it under
// the day it arrived (checkStoredAt), where a partition is kept. The
// record made of it when the parser panics does too: under 1990 no
// partition is kept, and it was refused at every redelivery.
func TestRev42ParserPanicOnAnImplausibleStoredTimeIsStorable(t *testing.T) {
	t.Parallel()
	m := Received{Subject: "dlq.acme.orders.implausible", Stream: "DLQ", Seq: 9, Time: time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC), Data: []byte("{}")}
	var r Record
	func() {
		defer survive(SourceDLQ, m, &r)
		panic("the parser's bug")
	}()
	assert.Contains(t, r.Flags, "parse_failed")
	assert.Contains(t, r.Flags, "implausible:dead_lettered_at")
	assert.WithinDuration(t, time.Now(), r.DeadLetteredAt, 25*time.Hour, "filed under the day it arrived")
}
