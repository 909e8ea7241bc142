package replay

import (
	"context"
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
// shape and read all 30,000 requests to count none.
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
	_, err = db.OwnerPool.Exec(ctx, `VACUUM ANALYZE replay_requests`)
	require.NoError(t, err)
	viewer := quarantine.Actor{Issuer: "https://idp", Subject: "sub-viewer"}

	for _, tc := range []struct {
		name string
		f    ListFilter
	}{
		{"PendingApproval", ListFilter{Tenants: []string{"acme"}, Viewer: viewer, Status: StatusPendingApproval}}, // its partial index: passes
		{"Rejected", ListFilter{Tenants: []string{"acme"}, Viewer: viewer, Status: StatusRejected}},
		{"ClassManual", ListFilter{Tenants: []string{"acme"}, Viewer: viewer, Class: "manual"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(listArgs(tc.f), tc.f.MineFirst, tc.f.After.ID, tc.f.After.Own, 51)
			// Planned for its values (a custom plan): no generic plan is needed.
			rows, err := db.Pool.Query(ctx, `EXPLAIN (ANALYZE) `+selectList, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...)
			require.NoError(t, err)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			plan := strings.Join(lines, "\n")
			require.Contains(t, plan, "rows=5 loops=1", "the page holds the five")
			assert.LessOrEqual(t, removedRev24(plan), 500, "requests read and dropped to show five; plan:\n%s", plan)
		})
	}

	// The dashboard's attention counts (AttentionOf), sent with every
	// dashboard view: its "done with problems in the last 7 days" is the
	// same status filter, with a time bound on coalesce(submitted_at,
	// created_at), which no index has either. None of the 30,000 requests
	// is one: the count reads them all to say 0.
	for _, tc := range []struct {
		name string
		f    func(*Attention) ListFilter
	}{
		{"DashboardReconcile", func(a *Attention) ListFilter { return a.Reconcile }},
		{"DashboardProblems", func(a *Attention) ListFilter { return a.Problems }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f(AttentionOf([]string{"acme"}, viewer, time.Now()))
			rows, err := db.Pool.Query(ctx, `EXPLAIN (ANALYZE) `+countListed,
				append([]any{pgx.QueryExecModeSimpleProtocol}, append(listArgs(f), AttentionMost+1)...)...)
			require.NoError(t, err)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			plan := strings.Join(lines, "\n")
			assert.LessOrEqual(t, removedRev24(plan), 500, "requests read and dropped to count none; plan:\n%s", plan)
		})
	}
}
