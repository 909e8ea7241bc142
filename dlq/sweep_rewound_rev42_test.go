package dlq

import (
	"context"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/logs"
)

// TestRev42SweepAfterALossDoesNotHoldStoredMessages: after the advisory
// stream lost its last messages, the sweep proved the sequences the loss
// may have reused by handing every message there to sweepStore, which
// judged each before the insert could find it stored. A kept give-up of a
// stream another replica watches was left to that replica: held for five
// sweeps, warned of as a dead letter acked without a row, the watermark
// standing behind it (DeadLetterSweepStuck), and with more than a hundred
// of them the catch-up stalled. The kept messages are found stored by
// their keys first and never held: one sweep proves the strict range
// through its end.
func TestRev42SweepAfterALossDoesNotHoldStoredMessages(t *testing.T) {
	t.Parallel()
	r := newRewindBed(t)
	ctx := context.Background()
	const advisories = "DLQ_ADVISORIES"
	var log logs.Buffer
	m := NewMetrics(prometheus.NewRegistry())
	this := NewIngester(IngestConfig{Watch: r.watchOrders(t)}, r.js, r.store, m, slog.New(slog.NewTextHandler(&log, nil)))
	require.NoError(t, this.Setup(ctx))
	r.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"app.*.emails.>"}})
	ws, err := ParseWatchStreams("ORDERS,EMAILS")
	require.NoError(t, err)
	other, _ := r.idle(t, IngestConfig{Watch: ws}) // EMAILS' give-ups are left to it
	giveUps := func(stream string, seqs ...int) {
		t.Helper()
		for _, seq := range seqs {
			publish(t, r.js, terminatedAdvisory(stream, seq))
		}
		r.peek(t, advisories, len(seqs)) // acked without a row
	}
	sweep := func(in *Ingester) sweepResult {
		t.Helper()
		res, err := in.sweep(ctx, advisories)
		require.NoError(t, err)
		return res
	}

	giveUps("EMAILS", 1, 2, 3)
	sweep(other)        // stores #1-#3
	r.restart(t, false) // the copy holds #1-#3
	giveUps("EMAILS", 4, 5, 6)
	sweep(other) // stores #4-#6; the probe at #6
	require.Equal(t, 6, countRows(t, r.db.Pool, "source_kind = 'advisory'"))
	r.restart(t, true) // #4-#6 lost

	giveUps("ORDERS", 4, 5, 6, 7) // #4-#7 again, this replica's own
	res := sweep(this)
	require.Contains(t, log.String(), "the stream lost messages it had stored", "the sweep found the advisory stream rewound")
	assert.NotContains(t, log.String(), "acked without a row not stored yet", "no kept give-up is warned of as acked without a row")
	assert.Empty(t, r.heldOf(t, advisories), "nor held for the replica that watches EMAILS")
	assert.Equal(t, uint64(4), res.Stored, "%+v", res)
	assert.Equal(t, uint64(3), res.AlreadyStored, "the kept ones, found stored by their keys: %+v", res)
	assert.Equal(t, 3, swept(m, advisories, sweptAlreadyStored))
	assert.Nil(t, r.strictFrom(t, advisories), "proven through the end of the strict range (#6) in one sweep")
	assert.Equal(t, int64(7), r.sweptTo(t, advisories))
	assert.Equal(t, 10, countRows(t, r.db.Pool, "source_kind = 'advisory'"), "the kept, the lost and the new ones, each once")
}
