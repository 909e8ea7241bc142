package dlq

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// rev-fixes3: two replicas whose settings differ (a rolling deploy that
// changes INGEST_BATCH_SIZE or INGEST_ACK_WAIT, or one replica configured
// apart) each took the other's max_ack_pending / max_batch for a change
// made by hand and put their own back at every health check: the consumer
// was updated back and forth for as long as both ran, each time logged as
// "changed (by hand?)" and counted, so DeadLetterIngestConsumerChanged
// fired for the whole rollout, or for ever. They settle on the higher
// limit now: after each replica checked the consumer ten times more, the
// consumer was put back at most once (by the replica with the higher one).
func TestRevFixes3ReplicasWithOtherSettingsFight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: 50 * time.Millisecond}, nil)
	c := b.start(t, IngestConfig{Workers: 1, BatchSize: 20, MaxWait: 10 * time.Millisecond, HealthEvery: 50 * time.Millisecond}, nil)
	checked := func(r *running) time.Time {
		if h := r.Health(); len(h.Streams) > 0 {
			return h.Streams[0].CheckedAt
		}
		return time.Time{}
	}
	for range 10 {
		ta, tc := checked(a), checked(c)
		wait.Until(t, "both replicas checked the consumer again", time.Minute, func() bool {
			return checked(a).After(ta) && checked(c).After(tc)
		})
	}
	ra := testutil.ToFloat64(a.metrics.ConsumerRepaired.WithLabelValues("DLQ"))
	rc := testutil.ToFloat64(c.metrics.ConsumerRepaired.WithLabelValues("DLQ"))
	assert.LessOrEqual(t, ra+rc, 1.0, "two replicas with other batch sizes put the consumer back %v and %v times: they fight over it", ra, rc)
}
