package dlq

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the ingester's Prometheus series (docs/alerts.yml uses them).
type Metrics struct {
	Ingested      *prometheus.CounterVec
	Malformed     *prometheus.CounterVec
	BatchSize     prometheus.Histogram
	CommitSeconds prometheus.Histogram
	LagSeconds    prometheus.Histogram
	StoreErrors   prometheus.Counter
	// CutOff is 1 while the replica is cut off from PostgreSQL
	// (cutOffFromPostgres): StoreErrors no longer rises then, so an
	// outage is alerted on by it too.
	CutOff prometheus.Gauge
	// StoreConflicts counts inserts of dead letters PostgreSQL rolled
	// back because they lost a lock race (LostRace), tried again: not
	// StoreErrors, which says PostgreSQL is out of reach.
	StoreConflicts prometheus.Counter
	// RawForm counts dead letters stored in their raw form, Unstorable
	// those refused in every form (left unacked, delivered again), and
	// IsolationStatements the extra insert statements spent finding them.
	RawForm             *prometheus.CounterVec
	Unstorable          prometheus.Counter
	IsolationStatements prometheus.Counter
	// Deferred counts deliveries of dead letters whose statement kept
	// failing for a reason not their data (a timeout, memory, a lock),
	// left unacked to come again.
	Deferred prometheus.Counter
	// HeaderRereads counts header blocks read again from the stream
	// because the NATS client delivered none.
	HeaderRereads prometheus.Counter
	// BufferedBytes is what the writers hold, received and not yet stored
	// (payload and header bytes), bounded by IngestConfig.MaxBufferedBytes.
	BufferedBytes prometheus.Gauge
	// Folded is when this console's folder last folded the counters
	// without failing (RunFolder): a fold that fails turn after turn
	// leaves every count, group and alert that reads them where it was.
	Folded prometheus.Gauge
	// ConsumerRepaired counts, by stream, the times a replica found the
	// settings of its consumer changed (by hand, or by a replica deployed
	// with other settings) and put its own back (Ingester.putBack).
	ConsumerRepaired *prometheus.CounterVec
	// Swept counts, by stream and outcome, the dead letters the sweep
	// found acked on the ingest consumer without a row (Ingester.sweep):
	// stored from the stream, already stored when it came to them, or
	// deleted from the stream before it did.
	Swept *prometheus.CounterVec
	// SweepBehind is, by stream, how many sequences the sweep's watermark
	// is behind the ingest consumer's ack floor after this console's last
	// sweep: above 0 sweep after sweep, a dead letter the sweep cannot
	// store holds it (or sweeps fail).
	SweepBehind *prometheus.GaugeVec

	health *healthBoard // the consumers' last checks, exported as gauges
	labels labelBound   // the tenants and item types given a series of their own
}

// Bounds of the tenant and item type labels of the ingest series. Both are
// producer input (any subject tokens), and every value is a series the
// process keeps in memory for good and writes on every scrape: a producer
// who may publish to dlq.<tenant>.> could grow them without bound.
// MetricTenants tenants, and MetricItemTypes item types of each, get
// series of their own: first the ones holding the most dead letters when
// the process starts (Metrics.AdmitStored), then the first come; later
// ones are counted under OtherLabel (tenant and item type). So
// quarantine_ingested_total holds at most MetricTenants ×
// (MetricItemTypes+1) × the error classes series, plus OtherLabel's. A
// tenant named "other" shares its series with the rest.
const (
	MetricTenants   = 100
	MetricItemTypes = 25
	OtherLabel      = "other"
)

// labelBound admits tenant and item type label values up to
// MetricTenants and MetricItemTypes (AdmitStored's, then the first come,
// for the process's life); the zero value is ready.
type labelBound struct {
	mu    sync.Mutex
	types map[string]map[string]bool // item types admitted, by tenant admitted
	// admitted, when set, is called with each tenant label as it comes
	// into use (a tenant admitted, and OtherLabel once the last slot is
	// taken), b.mu held.
	admitted func(tenant string)
}

// tenant returns the label of tenant: itself when admitted (now or
// before), else OtherLabel.
func (b *labelBound) tenant(tenant string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.admitTenant(tenant) {
		return tenant
	}
	return OtherLabel
}

// labels returns the labels of tenant and itemType: each itself when
// admitted, else OtherLabel (both, for a tenant not admitted).
func (b *labelBound) labels(tenant, itemType string) (string, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.admitTenant(tenant) {
		return OtherLabel, OtherLabel
	}
	types := b.types[tenant]
	if !types[itemType] {
		if len(types) >= MetricItemTypes {
			return tenant, OtherLabel
		}
		types[itemType] = true
	}
	return tenant, itemType
}

// AdmitStored gives series of their own first to the tenants holding the
// most dead letters in counts (the counters, Store.Depth) and, in each,
// the item types holding the most, as quarantine_depth keeps them
// (boundDepth), before any dead letter arrives: the slots are otherwise
// the first come, and a producer who publishes under many new tenants
// after a restart would push the tenants on-call knows under OtherLabel.
//
// It also exports quarantine_ingested_total at 0 for each combination of
// tenant, item type and error class so kept (and quarantine_malformed_total
// and quarantine_ingest_raw_form_total for each tenant, as admitTenant
// does): increase() needs two samples of a series, so a series first
// scraped at 1 (or at a whole burst) shows no increase, and the first
// dead letters of every kind on-call knows would be silent after each
// restart. Combinations new since the start are born at their first dead
// letter; the alerts' new-series term sees those (docs/alerts.yml).
func (m *Metrics) AdmitStored(counts []DepthCount) {
	bounded, kept := boundDepth(counts)
	b := &m.labels
	b.mu.Lock()
	defer b.mu.Unlock()
	for tenant := range kept {
		b.admitTenant(tenant)
	}
	for _, d := range bounded {
		tenant, itemType := d.Tenant, d.ItemType
		if kept[tenant] && itemType != OtherLabel {
			if types := b.types[tenant]; !types[itemType] {
				if len(types) >= MetricItemTypes {
					itemType = OtherLabel // as labels will count it
				} else {
					types[itemType] = true
				}
			}
		}
		m.Ingested.WithLabelValues(tenant, itemType, string(d.ErrorClass))
	}
}

// admitTenant reports whether tenant has series of its own, admitting it
// while there is room. b.mu is held.
func (b *labelBound) admitTenant(tenant string) bool {
	if b.types == nil {
		b.types = map[string]map[string]bool{}
	}
	if _, ok := b.types[tenant]; ok {
		return true
	}
	if len(b.types) >= MetricTenants {
		return false
	}
	b.types[tenant] = map[string]bool{}
	if b.admitted != nil {
		b.admitted(tenant)
		if len(b.types) == MetricTenants {
			b.admitted(OtherLabel) // the tenants from now on
		}
	}
	return true
}

// NewMetrics registers the ingest series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Ingested: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quarantine_ingested_total",
			Help: fmt.Sprintf("Dead letters stored (new rows only; redeliveries are not counted). Past the first %d tenants, and %d item types of each, "+
				"they are counted under tenant or item type %q.", MetricTenants, MetricItemTypes, OtherLabel),
		}, []string{"tenant", "item_type", "error_class"}),
		Malformed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quarantine_malformed_total",
			Help: fmt.Sprintf("Dead letters stored with the malformed flag (tenants as quarantine_ingested_total's, past %d under %q).", MetricTenants, OtherLabel),
		}, []string{"tenant"}),
		BatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "quarantine_ingest_batch_size",
			Help:    "Messages per insert batch.",
			Buckets: []float64{1, 10, 50, 100, 250, 500, 1000, 2000, 5000},
		}),
		CommitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "quarantine_ingest_commit_seconds",
			Help:    "Time to insert and commit one batch.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		LagSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "quarantine_ingest_lag_seconds",
			Help:    "From stored in JetStream (the delivery's stored time, as the NATS server's clock gave it) to committed in PostgreSQL, on the NATS server's clock (the console's moved by the skew its last check measured); never below 0.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}),
		StoreErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quarantine_ingest_store_errors_total",
			Help: "Batches that failed to store because PostgreSQL was unreachable, and were retried.",
		}),
		CutOff: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quarantine_ingest_cut_off",
			Help: "1 while this replica is cut off from PostgreSQL (it took no batch for 10 s: it hands back what it holds, takes nothing and waits for PostgreSQL to take a write, a rolled-back canary), else 0. quarantine_ingest_store_errors_total stops rising then.",
		}),
		StoreConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quarantine_ingest_store_conflicts_total",
			Help: "Inserts of dead letters PostgreSQL rolled back because they lost a lock race with another transaction (deadlock, serialization failure), and that were tried again; PostgreSQL answered.",
		}),
		RawForm: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quarantine_ingest_raw_form_total",
			Help: fmt.Sprintf("Dead letters PostgreSQL refused in their parsed form, stored in their raw form (flag raw_form); tenants as quarantine_ingested_total's, past %d under %q.",
				MetricTenants, OtherLabel),
		}, []string{"tenant"}),
		Unstorable: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quarantine_ingest_unstorable_total",
			Help: "Deliveries of dead letters PostgreSQL refused in every form; they stay unacked and come again.",
		}),
		Deferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quarantine_ingest_deferred_total",
			Help: "Deliveries (and sweeps) of dead letters whose insert kept failing for a reason not their data (statement timeout, out of memory, a lock, lock races lost every time); they stay unacked, or held by the sweep, and come again, never stored in raw form.",
		}),
		IsolationStatements: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quarantine_ingest_isolation_statements_total",
			Help: "Insert statements beyond one per batch, spent isolating the dead letters PostgreSQL refused.",
		}),
		HeaderRereads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quarantine_ingest_header_block_reads_total",
			Help: "Header blocks read again from the stream because the NATS client delivered none (none sent, or one it could not read).",
		}),
		BufferedBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quarantine_ingest_buffered_bytes",
			Help: "Payload and header bytes of dead letters received and not yet stored (waiting for a writer or in its batch).",
		}),
		Folded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quarantine_counters_last_fold_timestamp_seconds",
			Help: "When this console last folded ingest's and retention's counter deltas into the counters without failing (Unix time; 0 before its first). " +
				"Of all consoles one folds at a time: the newest of them all is when the counts were last brought up to date.",
		}),
		ConsumerRepaired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quarantine_ingest_consumer_repaired_total",
			Help: "Times a console found the settings of its ingest consumer changed (a filter, a pause, a delivery limit, the ack wait...) and put its own back; the log line names each change with both values.",
		}, []string{"stream"}),
		Swept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quarantine_ingest_swept_total",
			Help: "Dead letters the sweep found acked on the ingest consumer with no row (taken off it by another client, or passed over by a setting changed by hand), by outcome: " +
				"stored (from the stream, as a delivery would have been), already_stored (stored meanwhile), deleted (gone from the stream before the sweep came to it), " +
				"not_watched (an advisory of a stream no replica watches: not captured, by configuration).",
		}, []string{"stream", "outcome"}),
		SweepBehind: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "quarantine_ingest_sweep_behind_sequences",
			Help: "Sequences between the ingest consumer's ack floor and the sweep's watermark (every dead letter up to it proven stored), after this console's last sweep of the stream. " +
				"Above 0 sweep after sweep: a dead letter the sweep cannot store (refused by PostgreSQL, or unreadable) holds the watermark, or sweeps fail; the sweep stores what lies after it all the same.",
		}, []string{"stream"}),
		health: newHealthBoard(),
	}
	m.labels.admitted = m.exportTenant
	reg.MustRegister(m.collectors()...)
	return m
}

// Outcomes of quarantine_ingest_swept_total.
const (
	sweptStored        = "stored"
	sweptAlreadyStored = "already_stored"
	sweptDeleted       = "deleted"
	sweptNotWatched    = "not_watched"
)

// exportStreams exports the per-stream counters of streams at 0, before
// their first event: increase() needs two samples of a series, so a
// counter first scraped at 1 never fires its alert
// (DeadLetterIngestConsumerChanged, DeadLetterAckedWithoutRow) for the
// first repair or the first dead letters swept, nor
// DeadLetterStreamChanged (quarantine_dlq_stream_repaired_total).
func (m *Metrics) exportStreams(streams []string) {
	m.health.exportRepaired(streams)
	for _, stream := range streams {
		m.ConsumerRepaired.WithLabelValues(stream)
		for _, outcome := range []string{sweptStored, sweptAlreadyStored, sweptDeleted, sweptNotWatched} {
			m.Swept.WithLabelValues(stream, outcome)
		}
	}
}

// exportTenant exports tenant's per-tenant counters at 0 when it is given
// its label, for the reason exportStreams gives: from then on its first
// raw-form or malformed dead letter is an increase (DeadLetterStoredRaw).
// A tenant's very first dead letter still makes the series it counts in;
// the alerts' new-series term sees that one (docs/alerts.yml).
func (m *Metrics) exportTenant(tenant string) {
	m.RawForm.WithLabelValues(tenant)
	m.Malformed.WithLabelValues(tenant)
}

// collectors are every series of m, for registering.
func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Ingested, m.Malformed, m.BatchSize, m.CommitSeconds, m.LagSeconds, m.StoreErrors, m.CutOff, m.StoreConflicts,
		m.RawForm, m.Unstorable, m.Deferred, m.IsolationStatements, m.HeaderRereads, m.BufferedBytes, m.Folded,
		m.ConsumerRepaired, m.Swept, m.SweepBehind, newHealthCollector(m.health)}
}

// countStoreFailure counts an insert of dead letters that failed with err:
// a lost lock race apart (StoreConflicts), anything else as a store error.
func (m *Metrics) countStoreFailure(err error) {
	if LostRace(err) {
		m.StoreConflicts.Inc()
		return
	}
	m.StoreErrors.Inc()
}

// observeBatch counts a batch of deliveries stored: its size, the time
// its insert took, the dead letters it stored and each one's lag.
func (m *Metrics) observeBatch(n int, took time.Duration, inserted []Inserted) {
	m.observeInsert(n, took)
	m.countStored(inserted, true)
}

// observeStored counts dead letters of deliveries stored by an insert that
// did not end the batch (it failed after storing them, and the batch was
// handed back): as observeBatch does, without a batch size or commit time.
func (m *Metrics) observeStored(inserted []Inserted) {
	m.countStored(inserted, true)
}

// observeSwept counts a batch the sweep stored as observeBatch does, but
// not in quarantine_ingest_lag_seconds: a dead letter acked without a row
// and stored by the sweep minutes or days later says nothing of how far
// ingest lags (DeadLetterIngestLagging would fire for it);
// quarantine_ingest_swept_total counts it.
func (m *Metrics) observeSwept(n int, took time.Duration, inserted []Inserted) {
	m.observeInsert(n, took)
	m.countStored(inserted, false)
}

// observeInsert counts an insert's size (n records) and how long it took.
func (m *Metrics) observeInsert(n int, took time.Duration) {
	m.BatchSize.Observe(float64(n))
	m.CommitSeconds.Observe(took.Seconds())
}

// countStored counts the dead letters stored and, with lag, each one's
// lag (ingestLag).
func (m *Metrics) countStored(inserted []Inserted, lag bool) {
	// StoredAt is on the NATS server's clock: the console's, moved back by
	// the skew the last check measured, is now on it.
	now := time.Now().Add(-m.health.lastSkew())
	for _, in := range inserted {
		tenant, itemType := m.labels.labels(in.Tenant, in.ItemType)
		m.Ingested.WithLabelValues(tenant, itemType, string(in.ErrorClass)).Inc()
		if in.Malformed {
			m.Malformed.WithLabelValues(tenant).Inc()
		}
		if d, ok := ingestLag(now, in.StoredAt); lag && ok {
			m.LagSeconds.Observe(d.Seconds())
		}
	}
}

// ingestLag is how long ago, at now (on the NATS server's clock),
// JetStream stored a delivery stored at storedAt (its own clock, as it
// stored it: never the dead-lettered time a stored time of a reset clock
// was moved to, checkStoredAt, which is the console's day and says nothing
// of how long it waited). A delivery without a stored time (its metadata
// unreadable) has none (false). A lag below zero is the skew measured a
// check ago, or the server's clock set back since: it counts as none (0),
// never as a negative observation, which would sit below every bucket and
// hide the lag of the others from DeadLetterIngestLagging's quantile.
func ingestLag(now, storedAt time.Time) (time.Duration, bool) {
	if storedAt.IsZero() {
		return 0, false
	}
	return max(now.Sub(storedAt), 0), true
}

// DepthCollector reports current depth and the oldest unresolved age at
// scrape time from the trigger-kept counters (no count(*) over the table).
type DepthCollector struct {
	store  *Store
	log    *slog.Logger
	depth  *prometheus.Desc
	oldest *prometheus.Desc
}

// NewDepthCollector returns a collector reading from store.
func NewDepthCollector(store *Store, log *slog.Logger) *DepthCollector {
	return &DepthCollector{
		store: store,
		log:   log,
		depth: prometheus.NewDesc("quarantine_depth",
			fmt.Sprintf("Dead letters by tenant, item type, class and status (the %d tenants with the most and the %d item types with the most in each; the rest under %q).",
				MetricTenants, MetricItemTypes, OtherLabel),
			[]string{"tenant", "item_type", "error_class", "status"}, nil),
		oldest: prometheus.NewDesc("quarantine_oldest_unresolved_age_seconds",
			fmt.Sprintf("Age of the oldest unresolved dead letter per tenant (those of quarantine_depth; the rest under %q).", OtherLabel),
			[]string{"tenant"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *DepthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.oldest
}

// Collect implements prometheus.Collector. A database error is logged and
// the series are left out of this scrape.
func (c *DepthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.store.Depth(ctx)
	if err != nil {
		c.log.Warn("depth metric", "err", err)
		return
	}
	counts, kept := boundDepth(counts)
	for _, d := range counts {
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(d.N),
			d.Tenant, d.ItemType, string(d.ErrorClass), string(d.Status))
	}
	oldest, err := c.store.OldestUnresolved(ctx)
	if err != nil {
		c.log.Warn("oldest age metric", "err", err)
		return
	}
	now := time.Now()
	for tenant, at := range boundOldest(oldest, kept) {
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, now.Sub(at).Seconds(), tenant)
	}
}

// boundDepth bounds the depth series as the ingest series are bounded
// (MetricTenants, MetricItemTypes), since the counters hold every tenant
// and item type any producer wrote: the MetricTenants tenants with the
// most dead letters keep series of their own (ties by name), and in each
// the MetricItemTypes item types with the most; the rest are added up
// under OtherLabel. It returns the counts so bounded and the tenants kept.
// Which ones are kept may change from one scrape to the next as the
// counts move.
func boundDepth(counts []DepthCount) ([]DepthCount, map[string]bool) {
	tenantN := map[string]int64{}
	typeN := map[string]map[string]int64{} // by tenant, by item type
	for _, d := range counts {
		tenantN[d.Tenant] += d.N
		if typeN[d.Tenant] == nil {
			typeN[d.Tenant] = map[string]int64{}
		}
		typeN[d.Tenant][d.ItemType] += d.N
	}
	kept := topByCount(tenantN, MetricTenants)
	keptTypes := map[string]map[string]bool{}
	for tenant := range kept {
		keptTypes[tenant] = topByCount(typeN[tenant], MetricItemTypes)
	}
	type key struct {
		tenant, itemType string
		class            ErrorClass
		status           Status
	}
	sums := map[key]int64{}
	var order []key
	for _, d := range counts {
		k := key{OtherLabel, OtherLabel, d.ErrorClass, d.Status}
		if kept[d.Tenant] {
			k.tenant = d.Tenant
			if keptTypes[d.Tenant][d.ItemType] {
				k.itemType = d.ItemType
			}
		}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		sums[k] += d.N
	}
	out := make([]DepthCount, 0, len(order))
	for _, k := range order {
		out = append(out, DepthCount{Tenant: k.tenant, ItemType: k.itemType, ErrorClass: k.class, Status: k.status, N: sums[k]})
	}
	return out, kept
}

// topByCount returns the at most limit names with the highest counts (ties
// by name).
func topByCount(counts map[string]int64, limit int) map[string]bool {
	names := make([]string, 0, len(counts))
	for name := range counts {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b)) })
	top := make(map[string]bool, min(limit, len(names)))
	for _, name := range names[:min(limit, len(names))] {
		top[name] = true
	}
	return top
}

// boundOldest keeps the oldest unresolved time of the tenants kept, and
// the oldest of the others under OtherLabel.
func boundOldest(oldest map[string]time.Time, kept map[string]bool) map[string]time.Time {
	out := make(map[string]time.Time, len(kept)+1)
	for tenant, at := range oldest {
		if !kept[tenant] {
			tenant = OtherLabel
		}
		if was, ok := out[tenant]; !ok || at.Before(was) {
			out[tenant] = at
		}
	}
	return out
}
