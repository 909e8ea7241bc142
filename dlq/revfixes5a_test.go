package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// Review rev-fixes5a: the ingest sweep and headers-only deliveries.

// TestRevFixes5aSweepStuckSequenceBlocksTheRest: one dead letter acked
// without a row that the sweep cannot store (PostgreSQL refuses it in
// every form; the same holds for one whose read from the stream keeps
// failing) holds the watermark before it, as it should, but a step that
// stops short also ends the sweep (more is false), and the next sweep
// starts from the same watermark with the same 10,000-sequence window:
// no sweep ever looks past watermark+10,000 again. Every dead letter
// acked without a row after that (here #10,002-#10,010, passed over by a
// consumer moved forward by hand) is never stored, and the stream's age
// limit later deletes it. One dead letter stalls the safety net for all
// the others (invariant 10). A fixed sweep keeps the watermark before the
// stuck one but goes on proving (and storing) what lies after it, up to
// its bound of steps.
func TestRevFixes5aSweepStuckSequenceBlocksTheRest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{})

	const total = sweepStep + 10
	for seq := 1; seq <= total; seq++ {
		data := "ok"
		if seq == 2 {
			data = "new 1" // refused by refuseNewOne's trigger
		}
		_, err := b.js.PublishAsync("dlq.acme.search.index_update", []byte(data))
		require.NoError(t, err)
		if seq%1000 == 0 {
			select {
			case <-b.js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				t.Fatal("publishes not acked within a minute")
			}
		}
	}
	select {
	case <-b.js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		t.Fatal("publishes not acked within a minute")
	}
	// Someone moves the ingest consumer past them all (nats consumer
	// reset DLQ quarantine-ingest <seq>, or a peek of every one): all
	// acked, none delivered to the console.
	_, err := b.js.ResetConsumerToSequence(ctx, "DLQ", "quarantine-ingest", total+1)
	require.NoError(t, err)
	wait.Until(t, "the ack floor past them all", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == total })
	refuseNewOne(t, b)

	for range 3 {
		_, err := in.sweep(ctx, "DLQ")
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), b.sweptTo(t, "DLQ"), "the watermark held before the one refused")
	assert.Equal(t, total-1, countRows(t, b.db.Pool, "true"),
		"every dead letter acked without a row but the one PostgreSQL refuses is stored by the sweeps (lead: those past watermark+%d never are)", sweepStep)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "source_seq = $1", int64(total)), "the last one, #%d, stored", total)
}
