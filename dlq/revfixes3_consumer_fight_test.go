package dlq

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// rev-fixes3: two replicas whose settings differ (a rolling deploy that
// changes INGEST_BATCH_SIZE or ACK_WAIT, or one replica configured apart)
// each take the other's max_ack_pending / ack_wait for a change made by
// hand and put their own back at every health check: the consumer is
// updated back and forth for as long as both run, each time logged as
// "changed (by hand?)" and counted, so ConsumerRepaired (docs/alerts.yml)
// fires for the whole rollout, or for ever.
func TestRevFixes3ReplicasWithOtherSettingsFight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: 50 * time.Millisecond}, nil)
	c := b.start(t, IngestConfig{Workers: 1, BatchSize: 20, MaxWait: 10 * time.Millisecond, HealthEvery: 50 * time.Millisecond}, nil)
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ra := testutil.ToFloat64(a.metrics.ConsumerRepaired.WithLabelValues("DLQ"))
		rc := testutil.ToFloat64(c.metrics.ConsumerRepaired.WithLabelValues("DLQ"))
		if ra >= 5 && rc >= 5 {
			t.Fatalf("two replicas with other batch sizes put the consumer back %v and %v times: they fight over it", ra, rc)
		}
		select {
		case <-deadline:
			return
		case <-tick.C:
		}
	}
}
