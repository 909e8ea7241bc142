package audit

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CheckpointCollector reports, at each scrape, how far the chain's head is
// from its last signed checkpoint: a console that stopped signing (a key it
// cannot read, database errors) shows as growing numbers.
type CheckpointCollector struct {
	db       Querier
	log      *slog.Logger
	unsigned *prometheus.Desc
	age      *prometheus.Desc
}

// NewCheckpointCollector returns the collector of
// quarantine_audit_unsigned_entries and
// quarantine_audit_checkpoint_age_seconds.
func NewCheckpointCollector(db Querier, log *slog.Logger) *CheckpointCollector {
	return &CheckpointCollector{
		db: db, log: log,
		unsigned: prometheus.NewDesc("quarantine_audit_unsigned_entries",
			"Audit entries after the last signed checkpoint.", nil, nil),
		age: prometheus.NewDesc("quarantine_audit_checkpoint_age_seconds",
			"Seconds since the last signed checkpoint (absent before the first).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *CheckpointCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.unsigned
	ch <- c.age
}

// Collect implements prometheus.Collector. A database error is logged and
// the series are left out of this scrape.
func (c *CheckpointCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var (
		head, last int64
		lastAt     *time.Time
		now        time.Time
	)
	if err := c.db.QueryRow(ctx, selectCheckpointState).Scan(&head, &last, &lastAt, &now); err != nil {
		c.log.Warn("audit checkpoint metric", "err", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.unsigned, prometheus.GaugeValue, float64(head-last))
	if lastAt != nil {
		ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, now.Sub(*lastAt).Seconds())
	}
}
