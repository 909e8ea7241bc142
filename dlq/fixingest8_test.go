package dlq

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixIngest8ProbeStoredRawCountedOnce: the smallest record of a batch
// busy busyAttempts times, which PostgreSQL refuses in its parsed form, is
// stored in its raw form by the probe. It is counted once: stored
// (quarantine_ingested_total, quarantine_malformed_total) and in raw form
// (quarantine_ingest_raw_form_total), though the bisection finds it stored
// and refuses its parsed form again.
func TestFixIngest8ProbeStoredRawCountedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.corruptToast(t, `IF NEW.payload = 'small'::bytea AND NOT 'raw_form' = ANY(NEW.flags) THEN
                RAISE EXCEPTION 'test refuses the parsed form';
            END IF;`)
	cfg := IngestConfig{Workers: 1, MaxWait: 200 * time.Millisecond, RetryUnstorable: time.Minute}
	b.start(t, cfg, nil).stop() // makes the stream; both dead letters then come in one batch

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: bytes.Repeat([]byte("x"), 3000)})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("small")})
	r := b.start(t, cfg, nil)

	wait.Until(t, "the small one acked, the large one deferred", time.Minute, func() bool {
		return countRows(t, b.db.Pool, "true") == 1 && b.consumerInfo(t).NumAckPending == 1 && sumCounterVec(t, r.metrics.Deferred) >= 1
	})
	require.Contains(t, b.row(t, "true").Flags, "raw_form")
	assert.Equal(t, 1.0, sumCounterVec(t, r.metrics.Ingested), "stored once, counted once")
	assert.Equal(t, 1.0, sumCounterVec(t, r.metrics.Malformed))
	assert.Equal(t, 1.0, sumCounterVec(t, r.metrics.RawForm), "in raw form once, though the bisection refused its parsed form again")
}

// TestFixIngest8LagFromTheStoredTime: a dead letter a NATS server whose
// clock was reset stored in 2001 is kept under the day it arrived
// (checkStoredAt), but its lag is measured from the time JetStream
// stored it against the server's time of the commit (the skew the check
// measured against that same clock): seconds, not the years between the
// reset clock and the console's day, negative. A lag below zero (a skew
// measured a check ago) is observed as 0, never below every bucket.
func TestFixIngest8LagFromTheStoredTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	stored := time.Date(2001, 1, 3, 5, 0, 0, 0, time.UTC)
	rec := ParseDLQ("dlq", Received{Subject: "dlq.acme.search.index_update", Data: []byte("x"), Stream: "DLQ", Seq: 1, Time: stored})
	require.Contains(t, rec.Flags, "implausible:dead_lettered_at")
	require.NotEqual(t, stored, rec.DeadLetteredAt, "kept under the day it arrived")
	res, err := b.store.Insert(ctx, []Record{rec})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 1)
	require.True(t, res.Inserted[0].StoredAt.Equal(stored), "the stored time as the server gave it")

	lag := func(t *testing.T, serverNow time.Time) *dto.Histogram {
		m := NewMetrics(prometheus.NewRegistry())
		m.health.setSkew(time.Since(serverNow)) // the console's clock ahead of the server's by that much
		m.observeBatch(1, time.Millisecond, res.Inserted)
		var out dto.Metric
		require.NoError(t, m.LagSeconds.Write(&out))
		return out.GetHistogram()
	}
	t.Run("Seconds", func(t *testing.T) {
		h := lag(t, stored.Add(3*time.Second))
		assert.Equal(t, uint64(1), h.GetSampleCount())
		assert.InDelta(t, 3.0, h.GetSampleSum(), 0.5, "three seconds on the server's clock")
	})
	t.Run("NeverNegative", func(t *testing.T) {
		h := lag(t, stored.Add(-time.Minute))
		assert.Equal(t, uint64(1), h.GetSampleCount())
		assert.Zero(t, h.GetSampleSum(), "observed as no lag")
	})
	t.Run("UnknownNotObserved", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		m.observeBatch(1, time.Millisecond, []Inserted{{Tenant: "acme", ItemType: "search.index_update", ErrorClass: "transient"}})
		var out dto.Metric
		require.NoError(t, m.LagSeconds.Write(&out))
		assert.Zero(t, out.GetHistogram().GetSampleCount(), "no stored time, no lag")
		assert.Equal(t, 1.0, sumCounterVec(t, m.Ingested), "counted stored all the same")
	})
}
