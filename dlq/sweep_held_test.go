package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestSweepGoesOnPastWhatHoldsItsWatermark: a dead letter PostgreSQL
// refuses in every form holds the sweep's watermark before it, and
// quarantine_ingest_sweep_behind_sequences says by how much; the sweep
// stores what lies after it all the same, more than a step's worth; the
// sweep after that tries the held one again and proves nothing twice (one
// missing, the refused one); once PostgreSQL takes it, the watermark
// reaches the ack floor and the gauge 0.
func TestSweepGoesOnPastWhatHoldsItsWatermark(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, m := b.idle(t, IngestConfig{})

	const total = sweepStep + 5
	for seq := 1; seq <= total; seq++ {
		data := "ok"
		if seq == 2 {
			data = "new 1" // refused by refuseNewOne's trigger
		}
		_, err := b.js.PublishAsync("dlq.acme.search.index_update", []byte(data))
		require.NoError(t, err)
		if seq%1000 == 0 || seq == total {
			select {
			case <-b.js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				t.Fatal("publishes not acked within a minute")
			}
		}
	}
	_, err := b.js.ResetConsumerToSequence(ctx, "DLQ", "quarantine-ingest", total+1)
	require.NoError(t, err)
	wait.Until(t, "the ack floor past them all", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == total })
	refuseNewOne(t, b)
	behind := func() int { return int(testutil.ToFloat64(m.SweepBehind.WithLabelValues("DLQ"))) }

	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(total-1), res.Stored)
	assert.Equal(t, total-1, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, int64(1), b.sweptTo(t, "DLQ"))
	assert.Equal(t, total-1, behind(), "the watermark before the refused one, the ack floor at the last")

	res, err = in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.Missing, "only the refused one is tried again")
	assert.Equal(t, uint64(0), res.Stored)
	assert.Equal(t, total-1, behind())

	b.dropTrigger(t, "test_refuses_new")
	res, err = in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.Stored)
	assert.Equal(t, total, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, int64(total), b.sweptTo(t, "DLQ"), "proven up to the ack floor again")
	assert.Equal(t, 0, behind())
}

// TestSweptNotObservedAsIngestLag: a dead letter the sweep stores, acked
// without a row long before, is counted as stored (ingested_total) and by
// the sweep (swept_total), but not in quarantine_ingest_lag_seconds: its
// age says nothing of how far ingest lags, and DeadLetterIngestLagging
// would fire for it.
func TestSweptNotObservedAsIngestLag(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in, m := b.idle(t, IngestConfig{})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("peeked")})
	b.peek(t, "DLQ", 1)

	res, err := in.sweep(context.Background(), "DLQ")
	require.NoError(t, err)
	require.Equal(t, uint64(1), res.Stored)
	assert.Equal(t, 1, swept(m, "DLQ", "stored"))
	assert.Equal(t, 1, int(testutil.ToFloat64(m.Ingested)), "counted as stored")
	var lag dto.Metric
	require.NoError(t, m.LagSeconds.Write(&lag))
	assert.Zero(t, lag.GetHistogram().GetSampleCount(), "no lag observed for a swept dead letter")
}
