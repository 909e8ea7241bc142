package replay

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricsCollector reports at scrape time, from the database, what on-call
// needs to see of replays whichever process runs the workers (serve or
// console worker): the open requests by status, the jobs due that no
// worker holds, and the items that wait for a person because nobody can
// know whether they landed. Each is one statement over a partial index.
type MetricsCollector struct {
	db      querier
	log     *slog.Logger
	open    *prometheus.Desc
	waiting *prometheus.Desc
	settle  *prometheus.Desc
}

// NewMetricsCollector returns a collector reading from db.
func NewMetricsCollector(db querier, log *slog.Logger) *MetricsCollector {
	return &MetricsCollector{
		db: db, log: log,
		open: prometheus.NewDesc("quarantine_replay_requests_open",
			"Replay requests not yet ended, by status (draft, pending_approval, approved, running).", []string{"status"}, nil),
		waiting: prometheus.NewDesc("quarantine_replay_jobs_waiting",
			"Replay jobs due now that no worker holds (pending, deferred or unknown past their time, or claimed under a lease that ran out). "+
				"It falls as workers publish; one that does not fall means no worker takes them.", nil, nil),
		settle: prometheus.NewDesc("quarantine_replay_items_needing_reconciliation",
			"Replayed items nobody can know landed or not (needs_reconciliation): each waits for a person to check the target and decide.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *MetricsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.open
	ch <- c.waiting
	ch <- c.settle
}

const (
	// Statuses besides the open ones are left out by replay_requests_open_idx.
	selectOpenRequests = `SELECT status, count(*) FROM replay_requests
        WHERE status NOT IN ('done', 'done_with_problems', 'rejected', 'cancelled', 'void') GROUP BY status`
	// replay_jobs_ready_idx holds exactly these states, by not_before.
	selectJobsWaiting = `SELECT count(*) FROM replay_jobs
        WHERE state IN ('pending', 'claimed', 'deferred', 'unknown') AND not_before <= now()
          AND (state <> 'claimed' OR lease_until < now())`
	// replay_jobs_unsettled_idx holds exactly these.
	selectJobsUnsettled = `SELECT count(*) FROM replay_jobs WHERE state = 'needs_reconciliation'`
)

// Collect implements prometheus.Collector. A database error is logged and
// the series it would give are left out of this scrape.
func (c *MetricsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts := map[Status]int64{StatusDraft: 0, StatusPendingApproval: 0, StatusApproved: 0, StatusRunning: 0}
	rows, err := c.db.Query(ctx, selectOpenRequests)
	if err == nil {
		for rows.Next() {
			var s Status
			var n int64
			if err = rows.Scan(&s, &n); err != nil {
				break
			}
			counts[s] = n
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		c.log.Warn("replay requests metric", "err", err)
	} else {
		for s, n := range counts {
			ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(n), string(s))
		}
	}
	for _, g := range []struct {
		desc *prometheus.Desc
		sql  string
	}{{c.waiting, selectJobsWaiting}, {c.settle, selectJobsUnsettled}} {
		var n int64
		if err := c.db.QueryRow(ctx, g.sql).Scan(&n); err != nil {
			c.log.Warn("replay jobs metric", "err", err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(n))
	}
}
