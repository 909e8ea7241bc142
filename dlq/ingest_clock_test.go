package dlq

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestIngestLagOnTheServersClock: the ingest lag is the NATS server's time
// of a dead letter against the server's time of its commit, not against
// the console's clock: a console whose clock runs an hour ahead observes a
// dead letter stored a moment ago (an hour ago by its own clock) as a
// moment old, and DeadLetterIngestLagging stays quiet. The skew is what
// each consumer check measures from the time in JetStream's answer.
func TestIngestLagOnTheServersClock(t *testing.T) {
	t.Parallel()
	t.Run("HistogramCorrected", func(t *testing.T) {
		t.Parallel()
		m := NewMetrics(prometheus.NewRegistry())
		m.health.setSkew(time.Hour) // the console's clock an hour ahead
		m.observeBatch(1, time.Millisecond, []Inserted{{Tenant: "acme", ItemType: "search.index_update", ErrorClass: "transient",
			StoredAt: time.Now().Add(-time.Hour - time.Second)}})
		var out dto.Metric
		require.NoError(t, m.LagSeconds.Write(&out))
		assert.InDelta(t, 1.0, out.GetHistogram().GetSampleSum(), 0.5, "a second, not an hour")
	})
	t.Run("SkewMeasured", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := b.start(t, IngestConfig{HealthEvery: 50 * time.Millisecond}, nil)
		wait.Until(t, "a check", time.Minute, func() bool { return len(r.Health().Streams) == 1 })
		s := r.Health().Streams[0]
		// One machine here: the skew is about the request's round trip,
		// measured (the answer carries the server's time), never exactly 0.
		assert.NotZero(t, s.Skew)
		assert.Less(t, s.Skew.Abs(), time.Second)
		assert.Less(t, r.metrics.health.lastSkew().Abs(), time.Second)
	})
}
