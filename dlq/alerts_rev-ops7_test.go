package dlq

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// seriesOf returns the label sets c exports now, without creating any
// (WithLabelValues would).
func seriesOf(t *testing.T, c prometheus.Collector) []map[string]string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out = append(out, l)
		}
	}
	return out
}

func hasSeries(series []map[string]string, want map[string]string) bool {
	for _, s := range series {
		ok := true
		for k, v := range want {
			ok = ok && s[k] == v
		}
		if ok {
			return true
		}
	}
	return false
}

// TestRevOps7AlertCountersExistBeforeTheirFirstEvent (review rev-ops7).
//
// Defect (medium): docs/alerts.yml fires DeadLetterIngestConsumerChanged on
// increase(quarantine_ingest_consumer_repaired_total[15m]) > 0,
// DeadLetterAckedWithoutRow on
// increase(quarantine_ingest_swept_total{outcome="stored"}[15m]) > 0 and
// DeadLetterStoredRaw on increase(quarantine_ingest_raw_form_total[15m]) > 0.
// The three are CounterVecs whose series are created by their first Inc/Add
// (dlq/ingest_consumer.go putBack, ingest_sweep.go countSwept, ingest.go
// and ingest_sweep.go raw form). Prometheus' increase() needs two samples of
// a series: a series whose first sample is already 1 (or N) has no increase
// at all, so the FIRST consumer edit by hand, the first sweep that stores
// dead letters acked without a row, and a tenant's first raw-form dead
// letter after a start never fire their alert — in practice the common
// case (one `nats consumer edit`, one `nats consumer next`). The project
// knows the rule: authz.NewAnonymousDenials creates every kind "present at
// 0 from the start", and quarantine_dlq_stream_repaired_total is exported
// at 0 per stream from the first check; these three are not.
//
// Expected: once the ingester has checked and swept its stream, the stream's
// series quarantine_ingest_consumer_repaired_total{stream} and
// quarantine_ingest_swept_total{stream,outcome="stored"} (and the other
// outcomes) exist at 0; once a tenant has series of its own (its first
// dead letter stored), quarantine_ingest_raw_form_total{tenant} exists at 0.
func TestRevOps7AlertCountersExistBeforeTheirFirstEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond,
		HealthEvery: 50 * time.Millisecond, SweepEvery: 50 * time.Millisecond}, nil)
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("first")})
	b.waitRows(t, 1)
	wait.Until(t, "the first check and the first sweep of DLQ, and acme's dead letter counted", time.Minute, func() bool {
		return len(r.Health().Streams) == 1 && hasSeries(seriesOf(t, r.metrics.SweepBehind), map[string]string{"stream": "DLQ"}) &&
			hasSeries(seriesOf(t, r.metrics.Ingested), map[string]string{"tenant": "acme"})
	})
	// Nothing was changed by hand and nothing was acked without a row:
	// the counters must read 0, and exist, so that the first event is an
	// increase Prometheus can see.
	assert.True(t, hasSeries(seriesOf(t, r.metrics.ConsumerRepaired), map[string]string{"stream": "DLQ"}),
		"quarantine_ingest_consumer_repaired_total{stream=\"DLQ\"} is not exported before the first repair: the first repair appears at 1 and increase() sees none (DeadLetterIngestConsumerChanged never fires for it)")
	assert.True(t, hasSeries(seriesOf(t, r.metrics.Swept), map[string]string{"stream": "DLQ", "outcome": "stored"}),
		"quarantine_ingest_swept_total{stream=\"DLQ\",outcome=\"stored\"} is not exported before the first dead letter swept: the first sweep's stored count appears at once and increase() sees none (DeadLetterAckedWithoutRow never fires for it)")
	assert.True(t, hasSeries(seriesOf(t, r.metrics.RawForm), map[string]string{"tenant": "acme"}),
		"quarantine_ingest_raw_form_total{tenant=\"acme\"} is not exported once acme has series: acme's first raw-form dead letter appears at 1 and increase() sees none (DeadLetterStoredRaw never fires for it)")
	if t.Failed() {
		t.Logf("exported now: consumer_repaired=%d series, swept=%d series, raw_form=%d series; quarantine_dlq_stream_repaired_total is exported at 0 (for comparison): %v",
			testutil.CollectAndCount(r.metrics.ConsumerRepaired), testutil.CollectAndCount(r.metrics.Swept), testutil.CollectAndCount(r.metrics.RawForm),
			testutil.CollectAndCount(newHealthCollector(r.metrics.health), "quarantine_dlq_stream_repaired_total") > 0)
	}
}

// TestRevOps7StoredCombinationsHaveSeriesAfterARestart (review rev-ops7).
//
// Defect (medium): DeadLettersArriving (docs/alerts.yml) is
// sum by (tenant, item_type, error_class) (increase(quarantine_ingested_total[10m])) > 0.
// A console that starts (every deploy, every restart) admits the tenants and
// item types it already stores (Metrics.AdmitStored, from the counters) but
// creates no series for them: quarantine_ingested_total{tenant, item_type,
// error_class} appears only with the first dead letter counted after the
// start, already at 1 (or at the whole burst, when a consumer gives up on a
// batch between two scrapes). increase() needs two samples of a series, so
// that burst never fires DeadLettersArriving, nor, for a tenant,
// DeadLetterStoredRaw (quarantine_ingest_raw_form_total) or the first
// samples of DeadLetterMalformedRate (quarantine_malformed_total): after
// every deploy, the first burst of each kind of dead letter that on-call
// already knows is silent, and a one-off burst (the usual shape: a consumer
// gives up on what it held) is never alerted at all.
//
// Expected: AdmitStored (the combinations the console holds when it starts,
// within the same bounds) exports their series at 0 before any dead letter
// arrives: quarantine_ingested_total for each stored tenant, item type and
// error class, and quarantine_malformed_total and
// quarantine_ingest_raw_form_total for each stored tenant.
func TestRevOps7StoredCombinationsHaveSeriesAfterARestart(t *testing.T) {
	t.Parallel()
	m := NewMetrics(prometheus.NewRegistry())
	m.AdmitStored([]DepthCount{
		{Tenant: "acme", ItemType: "email.send", ErrorClass: ClassTransient, Status: StatusQuarantined, N: 40},
		{Tenant: "globex", ItemType: "orders.refund", ErrorClass: ClassPermanent, Status: StatusQuarantined, N: 3},
	})
	for _, want := range []map[string]string{
		{"tenant": "acme", "item_type": "email.send", "error_class": "transient"},
		{"tenant": "globex", "item_type": "orders.refund", "error_class": "permanent"},
	} {
		assert.True(t, hasSeries(seriesOf(t, m.Ingested), want),
			"quarantine_ingested_total%v is not exported after a start that admitted it: the first dead letters after the start appear at once and DeadLettersArriving's increase() never sees them", want)
	}
	for _, tenant := range []string{"acme", "globex"} {
		assert.True(t, hasSeries(seriesOf(t, m.RawForm), map[string]string{"tenant": tenant}),
			"quarantine_ingest_raw_form_total{tenant=%q} is not exported after a start that admitted the tenant", tenant)
		assert.True(t, hasSeries(seriesOf(t, m.Malformed), map[string]string{"tenant": tenant}),
			"quarantine_malformed_total{tenant=%q} is not exported after a start that admitted the tenant", tenant)
	}
}
