package audit

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CheckpointCollector reports, at each scrape, how far the chain's head is
// from its last signed checkpoint (the newest whose signature verifies
// with keys, LatestVerifiedCheckpoint): a console that stopped signing (a
// key it cannot read, database errors) shows as growing numbers, and a
// checkpoint someone else inserted neither hides them nor counts. Newer
// checkpoints that do not verify are counted apart.
//
// It reports the seqs of the head and of that checkpoint too, which never
// go down while the log is intact (it is append-only and never purged):
// kept by Prometheus, outside the database, they show a log cut back to
// an earlier signed head, which verifies with no anchor. Both are read
// from the database at each scrape, so a console that starts reports
// where the log is, not 0.
type CheckpointCollector struct {
	db         Querier
	keys       *KeySet
	log        *slog.Logger
	unsigned   *prometheus.Desc
	age        *prometheus.Desc
	unverified *prometheus.Desc
	refused    *prometheus.Desc
	headSeq    *prometheus.Desc
	signedSeq  *prometheus.Desc
}

// selectRefusedCount counts the log's audit.checkpoint_refused entries
// (audit_log_action_idx): the log is append-only, so the count never goes
// down, whichever replica reads it and however often it restarts.
const selectRefusedCount = `SELECT count(*) FROM audit_log WHERE action = '` + ActionCheckpointRefused + `'`

// NewCheckpointCollector returns the collector of
// quarantine_audit_unsigned_entries,
// quarantine_audit_checkpoint_age_seconds and
// quarantine_audit_unverified_checkpoints, counting from the newest
// checkpoint that verifies with keys, and of
// quarantine_audit_checkpoints_refused_total, the checkpoints the console
// refused (RecordTrusting): the gauge clears once a checkpoint that
// verifies is signed past a forged one, the counter does not. It reports
// quarantine_audit_head_seq, the seq of the log's newest entry (0 for an
// empty log), and quarantine_audit_checkpoint_seq, the seq of the newest
// checkpoint that verifies with keys (absent before the first).
func NewCheckpointCollector(db Querier, keys *KeySet, log *slog.Logger) *CheckpointCollector {
	return &CheckpointCollector{
		db: db, keys: keys, log: log,
		unsigned: prometheus.NewDesc("quarantine_audit_unsigned_entries",
			"Audit entries after the last signed checkpoint.", nil, nil),
		age: prometheus.NewDesc("quarantine_audit_checkpoint_age_seconds",
			"Seconds since the last signed checkpoint (absent before the first).", nil, nil),
		unverified: prometheus.NewDesc("quarantine_audit_unverified_checkpoints",
			"Checkpoints newer than the last signed one whose signature does not verify with the console's key: not the console's (run console audit verify).", nil, nil),
		refused: prometheus.NewDesc("quarantine_audit_checkpoints_refused_total",
			"Checkpoints the console refused as not its own when it signed past them (audit.checkpoint_refused entries in the log; never goes down).", nil, nil),
		headSeq: prometheus.NewDesc("quarantine_audit_head_seq",
			"Seq of the audit log's newest entry (0 for an empty log); never goes down unless entries were removed from its end.", nil, nil),
		signedSeq: prometheus.NewDesc("quarantine_audit_checkpoint_seq",
			"Seq of the last signed checkpoint, the newest whose signature verifies with the console's keys (absent before the first); never goes down unless the log was cut back to an earlier signed head.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *CheckpointCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.unsigned
	ch <- c.age
	ch <- c.unverified
	ch <- c.refused
	ch <- c.headSeq
	ch <- c.signedSeq
}

// Collect implements prometheus.Collector. A database error is logged and
// the series are left out of this scrape.
func (c *CheckpointCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var (
		head int64
		now  time.Time
	)
	if err := c.db.QueryRow(ctx, selectHeadAndClock).Scan(&head, &now); err != nil {
		c.log.Warn("audit checkpoint metric", "err", err)
		return
	}
	vc, err := LatestVerifiedCheckpoint(ctx, c.db, c.keys)
	if err != nil {
		c.log.Warn("audit checkpoint metric", "err", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.headSeq, prometheus.GaugeValue, float64(head))
	ch <- prometheus.MustNewConstMetric(c.unsigned, prometheus.GaugeValue, float64(head-vc.Checkpoint.Seq))
	ch <- prometheus.MustNewConstMetric(c.unverified, prometheus.GaugeValue, float64(vc.Unverified))
	var refused int64
	if err := c.db.QueryRow(ctx, selectRefusedCount).Scan(&refused); err != nil {
		c.log.Warn("audit checkpoint metric", "err", err)
	} else {
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(refused))
	}
	if vc.OK {
		ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, now.Sub(vc.Checkpoint.At).Seconds())
		ch <- prometheus.MustNewConstMetric(c.signedSeq, prometheus.GaugeValue, float64(vc.Checkpoint.Seq))
	}
}
