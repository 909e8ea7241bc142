package dlq

import (
	"bytes"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// sumCounterVec adds up every series of a counter vector.
func sumCounterVec(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	go func() { c.Collect(ch); close(ch) }()
	var sum float64
	for m := range ch {
		var out dto.Metric
		require.NoError(t, m.Write(&out))
		sum += out.GetCounter().GetValue()
	}
	return sum
}

// TestRevIngest8ProbeStoredRowNotCounted: a batch whose statement fails
// busyAttempts times for a reason not its data (Busy: since 78f2e5e also
// class XX, a corrupt TOAST page that only large rows meet) has its
// smallest record stored alone (Ingester.probe). probe throws away what
// that Insert did: the row is committed, but it is never observed
// (quarantine_ingested_total, quarantine_malformed_total, the lag
// histogram), and the bisection that follows finds it already stored, so
// nothing counts it later either. With a
// damaged TOAST relation every batch that holds one large dead letter loses
// the count of its smallest one; a tenant whose only dead letters go so is
// never seen by DeadLettersArriving.
func TestRevIngest8ProbeStoredRowNotCounted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.corruptToast(t, "")
	cfg := IngestConfig{Workers: 1, MaxWait: 200 * time.Millisecond, RetryUnstorable: time.Minute}
	b.start(t, cfg, nil).stop() // makes the stream; both dead letters then come in one batch

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: bytes.Repeat([]byte("x"), 3000)})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("small")})
	r := b.start(t, cfg, nil)

	b.waitRows(t, 1)
	require.Equal(t, []byte("small"), b.row(t, "true").Payload)
	// The batch is settled once the small one is acked (the large one
	// deferred and nak'd); counting comes before the acks.
	wait.Until(t, "the small one acked, the large one deferred", time.Minute, func() bool {
		return b.consumerInfo(t).NumAckPending == 1 && sumCounterVec(t, r.metrics.Deferred) >= 1
	})
	assert.Equal(t, 1, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, 1.0, sumCounterVec(t, r.metrics.Ingested),
		"one dead letter stored, one counted in quarantine_ingested_total")
}
