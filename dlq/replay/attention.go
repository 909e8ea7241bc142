package replay

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

// AttentionMost is the most requests Attention counts of each kind; past
// it the dashboard says "more than".
const AttentionMost = 99

// ProblemsSince is how far back the dashboard counts the requests done
// with problems (by when they were submitted, as the replays page's
// "from" filters): the recent ones, which someone may still be looking
// into; all of them only grow.
const ProblemsSince = 7 * 24 * time.Hour

// Attention counts the replay requests of some tenants that went wrong,
// for the dashboard: those with an item waiting for a person to reconcile
// it (Reconcile), and those done with problems submitted in the last
// ProblemsSince (Problems). Each is counted with the replays page's own
// filter (Reconcile, Problems: the filters the dashboard links to), so the
// count is what the list shows, up to AttentionMost+1. It is a
// dlq.BatchRead: the dashboard sends it in its batch, and its counts are
// read once the batch is sent.
type Attention struct {
	Reconcile, Problems ListFilter
	// ReconcileN and ProblemsN are the counts, up to AttentionMost+1.
	ReconcileN, ProblemsN int
}

// AttentionOf is the Attention of the requests in tenants that viewer
// sees on the replays page, at now.
func AttentionOf(tenants []string, viewer quarantine.Actor, now time.Time) *Attention {
	base := ListFilter{Tenants: tenants, Viewer: viewer}
	a := &Attention{Reconcile: base, Problems: base}
	a.Reconcile.Reconcile = true
	a.Problems.Status, a.Problems.From = StatusDoneWithProblems, now.Add(-ProblemsSince)
	return a
}

// countListed counts the requests f selects (listSelectionOf), up to
// most: the statement and its arguments.
func countListed(f ListFilter, most int) (string, pgx.NamedArgs) {
	s := listSelectionOf(f)
	s.args["most"] = most
	return `SELECT count(*) FROM (SELECT 1 FROM replay_requests WHERE ` + s.where() + ` LIMIT @most) m`, s.args
}

// Queue queues a's two counts on b.
func (a *Attention) Queue(b *pgx.Batch) {
	for _, c := range []struct {
		f ListFilter
		n *int
	}{{a.Reconcile, &a.ReconcileN}, {a.Problems, &a.ProblemsN}} {
		sql, args := countListed(c.f, AttentionMost+1)
		b.Queue(sql, args).QueryRow(func(row pgx.Row) error {
			if err := row.Scan(c.n); err != nil {
				return fmt.Errorf("count replay requests that went wrong: %w", err)
			}
			return nil
		})
	}
}
