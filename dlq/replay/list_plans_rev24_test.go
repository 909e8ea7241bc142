package replay

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// removedRev24 sums what an EXPLAIN ANALYZE says its scans read and
// dropped.
func removedRev24(plan string) int {
	n := 0
	for _, m := range regexp.MustCompile(`Rows Removed by (?:Filter|Index Recheck): (\d+)`).FindAllStringSubmatch(plan, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// readRev24 sums what an EXPLAIN ANALYZE says its scans of replay_requests
// returned, and what every scan read and dropped: a nested loop that walks
// the requests newest first and keeps those its inner side matches drops
// nothing by a filter, but reads every request it walks.
func readRev24(plan string) int {
	n := removedRev24(plan)
	for _, m := range regexp.MustCompile(`Scan(?: Backward)? (?:using \S+ )?on replay_requests .*actual time=\S+ rows=(\d+) loops=(\d+)`).FindAllStringSubmatch(plan, -1) {
		rows, _ := strconv.Atoi(m[1])
		loops, _ := strconv.Atoi(m[2])
		n += rows * loops
	}
	return n
}

// TestRevReplays24RareEndedStatusOrClassReadsEveryRequest: the replays
// page filtered by an ended status (rejected, cancelled, void,
// done_with_problems) or by a class reads every request of the viewer's
// tenants, whatever the page shows: no index leads with status or class
// (only pending_approval, draft and the open statuses have a partial one),
// so with the table analyzed the page is a sequential scan of the whole
// history, sorted: 29,995 of 30,000 requests read and dropped to show the
// five rejected ones (the five manual ones). The list's own rule is that
// "a page view reads a bounded number of rows whatever the history holds"
// (countedRequests); the page itself does not, nor do its counts, which
// select the same rows. The dashboard's attention counts (AttentionOf:
// requests waiting for reconciliation, requests done with problems in the
// last 7 days), sent with every dashboard view, are the same statement
// shape and read all 30,000 requests to count none (or three).
//
// Each statement is planned for its values, as the statement a page sends
// is (its filters are in its text: listSelectionOf), and is bounded on
// what its scans read: the three waiting for reconciliation read from
// their jobs (replay_jobs_unsettled_idx), not found by walking every
// request; a page of a common status (done) reads a page.
func TestRevReplays24RareEndedStatusOrClassReadsEveryRequest(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.OwnerPool.Exec(ctx, `
        INSERT INTO replay_requests (batch, tenant, class, status, requester_issuer, requester_subject, requester_email,
                                     policy_version, rate, intent_hash, item_count, created_at, submitted_at)
        SELECT 'b' || g, 'acme', CASE WHEN g <= 5 THEN 'manual' ELSE 'rebuildable' END,
               CASE WHEN g <= 5 THEN 'rejected' WHEN g <= 10 THEN 'pending_approval' ELSE 'done' END,
               'https://idp', 'sub-bot', 'bot@example.com',
               'v1', 10, sha256(int8send(g)), 1, now() - interval '30 days' + g * interval '1 minute',
               now() - interval '30 days' + g * interval '1 minute'
        FROM generate_series(1, 30000) g`)
	require.NoError(t, err)
	// Every done request's item replayed, and three of them each with an
	// item waiting for a person to reconcile it.
	_, err = db.OwnerPool.Exec(ctx, `
        INSERT INTO replay_jobs (request_id, dead_letter_id, dead_lettered_at, state)
        SELECT r.id, r.id, r.created_at, CASE WHEN r.id IN (100, 200, 300) THEN 'needs_reconciliation' ELSE 'replayed' END
        FROM replay_requests r WHERE r.status = 'done'`)
	require.NoError(t, err)
	_, err = db.OwnerPool.Exec(ctx, `VACUUM ANALYZE replay_requests, replay_jobs`)
	require.NoError(t, err)
	viewer := quarantine.Actor{Issuer: "https://idp", Subject: "sub-viewer"}

	table, err := replaypolicy.Load("../../dev/policy.toml")
	require.NoError(t, err)
	s := New(db.Pool, Config{Policy: func() *replaypolicy.Table { return table }})

	for _, tc := range []struct {
		name string
		f    ListFilter
		want int // the page's rows
	}{
		{"PendingApproval", ListFilter{Tenants: []string{"acme"}, Viewer: viewer, Status: StatusPendingApproval, Limit: 50}, 5}, // its partial index: passes
		{"Rejected", ListFilter{Tenants: []string{"acme"}, Viewer: viewer, Status: StatusRejected, Limit: 50}, 5},
		{"ClassManual", ListFilter{Tenants: []string{"acme"}, Viewer: viewer, Class: "manual", Limit: 50}, 5},
		{"Reconcile", ListFilter{Tenants: []string{"acme"}, Viewer: viewer, Reconcile: true, Limit: 50}, 3},
		{"ReconcileMineFirst", ListFilter{Tenants: []string{"acme"}, Viewer: viewer, Reconcile: true, MineFirst: true, Limit: 50}, 3},
		{"DoneIsCommon", ListFilter{Tenants: []string{"acme"}, Viewer: viewer, Status: StatusDone, Limit: 50}, 51}, // a page and one to tell there are more
		{"DoneMineFirst", ListFilter{Tenants: []string{"acme"}, Viewer: viewer, Status: StatusDone, MineFirst: true, Limit: 50}, 51},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sql, args := listQuery(tc.f)
			// Planned for its values (a custom plan): no generic plan is needed.
			rows, err := db.Pool.Query(ctx, `EXPLAIN (ANALYZE) `+sql, pgx.QueryExecModeSimpleProtocol, args)
			require.NoError(t, err)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			plan := strings.Join(lines, "\n")
			require.Contains(t, plan, fmt.Sprintf("rows=%d loops=1", tc.want), "the page holds the %d", tc.want)
			assert.LessOrEqual(t, removedRev24(plan), 500, "requests read and dropped to show %d; plan:\n%s", tc.want, plan)
			assert.LessOrEqual(t, readRev24(plan), 500, "requests read to show %d; plan:\n%s", tc.want, plan)

			// The page as the service lists it (the statement above, sent
			// as the pool sends it).
			page, more, err := s.List(ctx, tc.f)
			require.NoError(t, err)
			assert.Len(t, page, min(tc.want, tc.f.Limit))
			assert.Equal(t, tc.want > tc.f.Limit, more)
			if tc.f.Reconcile {
				for _, l := range page {
					assert.Contains(t, []int64{100, 200, 300}, l.ID)
					assert.Equal(t, 1, l.Progress.NeedsReconciliation)
				}
			}
		})
	}

	// The dashboard's attention counts (AttentionOf), sent with every
	// dashboard view: its "done with problems in the last 7 days" is the
	// same status filter, with a time bound on coalesce(submitted_at,
	// created_at), which no index has either. None of the 30,000 requests
	// is one: the count reads them all to say 0. Three wait for
	// reconciliation.
	for _, tc := range []struct {
		name string
		f    func(*Attention) ListFilter
		want int
	}{
		{"DashboardReconcile", func(a *Attention) ListFilter { return a.Reconcile }, 3},
		{"DashboardProblems", func(a *Attention) ListFilter { return a.Problems }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f(AttentionOf([]string{"acme"}, viewer, time.Now()))
			sql, args := countListed(f, AttentionMost+1)
			rows, err := db.Pool.Query(ctx, `EXPLAIN (ANALYZE) `+sql, pgx.QueryExecModeSimpleProtocol, args)
			require.NoError(t, err)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			plan := strings.Join(lines, "\n")
			assert.LessOrEqual(t, removedRev24(plan), 500, "requests read and dropped to count none; plan:\n%s", plan)
			assert.LessOrEqual(t, readRev24(plan), 500, "requests read to count %d; plan:\n%s", tc.want, plan)

			// The count as the dashboard sends it: in a batch.
			var n int
			b := &pgx.Batch{}
			b.Queue(sql, args).QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
			require.NoError(t, db.Pool.SendBatch(ctx, b).Close())
			assert.Equal(t, tc.want, n)
		})
	}
}
