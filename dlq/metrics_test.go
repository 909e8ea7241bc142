package dlq

import (
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAlertRulesUseExportedIngestSeries checks that every series of this
// package that docs/alerts.yml names (ingest, depth, age, the DLQ stream's
// limits, retention and the partition keeper) is one it
// exports: a rule on a misspelt series never fires, and nobody notices.
func TestAlertRulesUseExportedIngestSeries(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("../docs/alerts.yml")
	require.NoError(t, err)
	exported := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	km := newKeeperMetrics(nil)
	for _, c := range append(NewMetrics(prometheus.NewRegistry()).collectors(), NewDepthCollector(nil, nil), km.removed, km.runs, km.errors, km.lastPass, km.stale, km.ahead) {
		c.Describe(ch)
	}
	close(ch)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		exported[fqName.FindStringSubmatch(d.String())[1]] = true
	}
	named := regexp.MustCompile(`quarantine_(ingest|ingested|malformed|depth|oldest_unresolved|dlq_stream|retention|partition_keeper)[a-z_]*`).FindAllString(string(rules), -1)
	require.NotEmpty(t, named)
	for _, n := range named {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
		assert.True(t, exported[base], "docs/alerts.yml names %s, which the console does not export", n)
	}
	for _, want := range []string{"quarantine_ingest_pending_messages", "quarantine_ingest_oldest_unacked_age_seconds",
		"quarantine_dlq_stream_limit_risk_ratio", "quarantine_partition_keeper_last_pass_timestamp_seconds"} {
		assert.True(t, exported[want], want)
	}
}

// TestDepthSeriesBounded: quarantine_depth comes from the counters, which
// hold every tenant and item type any producer wrote; a scrape writes at
// most MetricTenants tenants (those with the most dead letters) and
// MetricItemTypes item types of each, the rest added up under OtherLabel,
// and loses no dead letter from the sum. A real tenant named "other"
// adds up with the rest instead of repeating a series.
func TestDepthSeriesBounded(t *testing.T) {
	var counts []DepthCount
	var total int64
	add := func(tenant, itemType string, n int64) {
		counts = append(counts, DepthCount{Tenant: tenant, ItemType: itemType, ErrorClass: "transient", Status: StatusQuarantined, N: n})
		total += n
	}
	for i := range MetricTenants + 50 {
		add(fmt.Sprintf("t%03d", i), "orders.created", int64(i+1))
	}
	for i := range MetricItemTypes + 15 {
		add("big", fmt.Sprintf("type.%02d", i), int64(1000+i))
	}
	add(OtherLabel, OtherLabel, 1)

	got, kept := boundDepth(counts)
	tenants, typesOfBig := map[string]bool{}, map[string]bool{}
	seen := map[DepthCount]bool{}
	var sum int64
	for _, d := range got {
		key := d
		key.N = 0
		require.False(t, seen[key], "one series per labels: %+v", d)
		seen[key] = true
		tenants[d.Tenant] = true
		if d.Tenant == "big" {
			typesOfBig[d.ItemType] = true
		}
		sum += d.N
	}
	assert.Equal(t, total, sum, "every dead letter is counted")
	assert.LessOrEqual(t, len(tenants), MetricTenants+1, "kept tenants and other")
	assert.Len(t, kept, MetricTenants)
	assert.True(t, kept["big"], "the tenant with the most is kept")
	assert.True(t, kept[fmt.Sprintf("t%03d", MetricTenants+49)], "and the next with the most")
	assert.False(t, kept["t000"], "the one with the fewest goes under other")
	assert.Len(t, typesOfBig, MetricItemTypes+1, "the item types with the most, and other")
	assert.True(t, typesOfBig[fmt.Sprintf("type.%02d", MetricItemTypes+14)])
	assert.True(t, typesOfBig[OtherLabel])

	now := time.Now()
	oldest := boundOldest(map[string]time.Time{"big": now, "t000": now.Add(-time.Hour), "t001": now.Add(-2 * time.Hour)}, kept)
	assert.Equal(t, map[string]time.Time{"big": now, OtherLabel: now.Add(-2 * time.Hour)}, oldest)
}

// TestStoredTenantsKeepTheirSeries: the ingest series' label slots go
// first to the tenants (and their item types) that hold the most dead
// letters when the process starts, so that a producer publishing under
// MetricTenants new tenants after a restart does not push the tenants
// on-call knows under OtherLabel; what is left goes to the first come.
func TestStoredTenantsKeepTheirSeries(t *testing.T) {
	t.Parallel()
	m := NewMetrics(prometheus.NewRegistry())
	m.AdmitStored([]DepthCount{
		{Tenant: "acme", ItemType: "email.send", ErrorClass: ClassTransient, Status: StatusQuarantined, N: 40},
		{Tenant: "globex", ItemType: "search.index_update", ErrorClass: ClassTransient, Status: StatusQuarantined, N: 7},
	})
	for i := range MetricTenants {
		m.labels.labels(fmt.Sprintf("junk-%d", i), "x")
	}
	tenant, itemType := m.labels.labels("acme", "email.send")
	assert.Equal(t, "acme", tenant)
	assert.Equal(t, "email.send", itemType)
	tenant, itemType = m.labels.labels("globex", "search.index_update")
	assert.Equal(t, "globex", tenant)
	assert.Equal(t, "search.index_update", itemType)
	tenant, _ = m.labels.labels(fmt.Sprintf("junk-%d", MetricTenants-1), "x")
	assert.Equal(t, OtherLabel, tenant, "the slots left went to the first come")
	tenant, _ = m.labels.labels("junk-0", "x")
	assert.Equal(t, "junk-0", tenant)
}

// TestAlertRulesSeeTheFirstEventOfEachCounter: increase() needs two
// samples of a series, so a series first scraped at 1 (or at a whole
// burst) shows no increase and its alert never fires. Every counter of
// this package that an increase() rule of docs/alerts.yml names is either
// exported at 0 by a new ingester, before its first event (labels known at
// start: none, stream, outcome), or labelled by what producers choose
// (tenant, item type, error class: new ones come at any time) and counted
// by the rule at its whole value while it is new within the rule's window
// (`x unless present_over_time(x[<window>] offset <window>)`: a series
// with no sample in the window before; the instant form `x unless x
// offset <window>` takes every series for new after one failed scrape,
// whose staleness markers hide it from that one instant).
func TestAlertRulesSeeTheFirstEventOfEachCounter(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("../docs/alerts.yml")
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	in := NewIngester(IngestConfig{Watch: []WatchStream{{Name: "ORDERS"}}}, nil, nil, m, slog.Default())
	streams := in.ingestStreams()
	require.Len(t, streams, 2, "the DLQ stream and the advisory stream")

	labelsOf := map[string][]string{}
	ch := make(chan *prometheus.Desc, 64)
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
	close(ch)
	desc := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	for d := range ch {
		p := desc.FindStringSubmatch(d.String())
		require.NotNil(t, p, d.String())
		labelsOf[p[1]] = strings.FieldsFunc(p[2], func(r rune) bool { return r == ',' })
	}
	fams, err := reg.Gather()
	require.NoError(t, err)
	exportedFor := map[string]map[string]bool{} // by name, the streams with a series ("" for an unlabelled one)
	for _, f := range fams {
		exportedFor[f.GetName()] = map[string]bool{}
		for _, s := range f.GetMetric() {
			stream := ""
			for _, l := range s.GetLabel() {
				if l.GetName() == "stream" {
					stream = l.GetValue()
				}
			}
			exportedFor[f.GetName()][stream] = true
		}
	}

	producerChosen := map[string]bool{"tenant": true, "item_type": true, "error_class": true}
	increase := regexp.MustCompile(`increase\((quarantine_[a-z_]+)(?:\{[^}]*\})?\[([0-9a-z]+)\]\)`)
	checked := 0
	for _, e := range regexp.MustCompile(`(?m)^\s*expr:\s*(.+)$`).FindAllStringSubmatch(string(rules), -1) {
		for _, inc := range increase.FindAllStringSubmatch(e[1], -1) {
			name, window := inc[1], inc[2]
			labels, ours := labelsOf[name]
			if !ours {
				continue // another package's counter
			}
			checked++
			if slices.ContainsFunc(labels, func(l string) bool { return producerChosen[l] }) {
				newSeries := fmt.Sprintf("(%s unless present_over_time(%s[%s] offset %s))", name, name, window, window)
				assert.Contains(t, e[1], newSeries, "%s is labelled by %v, which producers choose after the start: its first series is born at its first event, which increase() does not see", name, labels)
				continue
			}
			if !slices.Contains(labels, "stream") {
				assert.True(t, exportedFor[name][""], "%s is not exported before its first event", name)
				continue
			}
			for _, stream := range streams {
				assert.True(t, exportedFor[name][stream], "%s{stream=%q} is not exported before its first event", name, stream)
			}
		}
	}
	assert.GreaterOrEqual(t, checked, 5, "the increase() rules on this package's counters were found")
}

// TestAdmittedLabelsExportTheirSeriesAtZero: a tenant given its label
// (stored at the start, or first come) has its per-tenant counters at 0
// from then on, and so has OtherLabel once the last tenant slot is taken;
// what AdmitStored exports is what countBatch will count in (an item type
// past the bound under OtherLabel).
func TestAdmittedLabelsExportTheirSeriesAtZero(t *testing.T) {
	t.Parallel()
	m := NewMetrics(prometheus.NewRegistry())
	var stored []DepthCount
	for i := range MetricItemTypes + 3 {
		stored = append(stored, DepthCount{Tenant: "acme", ItemType: fmt.Sprint("type-", i), ErrorClass: ClassTransient, Status: StatusQuarantined, N: int64(100 - i)})
	}
	m.AdmitStored(stored)
	ingested := seriesOf(t, m.Ingested)
	assert.Len(t, ingested, MetricItemTypes+1, "the %d item types with the most, and %q for the rest", MetricItemTypes, OtherLabel)
	assert.True(t, hasSeries(ingested, map[string]string{"tenant": "acme", "item_type": "type-0", "error_class": "transient"}))
	assert.True(t, hasSeries(ingested, map[string]string{"tenant": "acme", "item_type": OtherLabel, "error_class": "transient"}))
	tenant, itemType := m.labels.labels("acme", fmt.Sprint("type-", MetricItemTypes+1))
	assert.Equal(t, [2]string{"acme", OtherLabel}, [2]string{tenant, itemType}, "counted where AdmitStored exported it")

	assert.False(t, hasSeries(seriesOf(t, m.RawForm), map[string]string{"tenant": "first-come"}))
	m.labels.labels("first-come", "x")
	assert.True(t, hasSeries(seriesOf(t, m.RawForm), map[string]string{"tenant": "first-come"}))
	assert.True(t, hasSeries(seriesOf(t, m.Malformed), map[string]string{"tenant": "first-come"}))

	for i := range MetricTenants {
		m.labels.tenant(fmt.Sprint("t-", i))
	}
	assert.True(t, hasSeries(seriesOf(t, m.RawForm), map[string]string{"tenant": OtherLabel}), "the tenants past the bound count under %q", OtherLabel)
	assert.Len(t, seriesOf(t, m.RawForm), MetricTenants+1)
	for _, c := range []*prometheus.CounterVec{m.Ingested, m.RawForm, m.Malformed} {
		for _, s := range collectValues(t, c) {
			assert.Zero(t, s, "exported at 0: nothing was counted")
		}
	}
}

// collectValues returns the value of each series c exports.
func collectValues(t *testing.T, c prometheus.Collector) []float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	require.NoError(t, err)
	var out []float64
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			out = append(out, m.GetCounter().GetValue())
		}
	}
	return out
}
