package dlq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOps20LastPurgeUndercountsAWidePass: the dashboard's "last purge:
// N of yours" sums the per-tenant audit rows (ActionPurgeTenant) of the
// newest pass, but reads only the newest 1,000 of them (selectLastPurge,
// maxPassRunsText), on the word that "a pass never exceeds" that many.
// A pass writes one such row per tenant per run: up to MaxRuns (100 by
// default) runs, each naming up to maxPurgeBreakdown (100) tenant and
// status pairs, so up to 10,000 rows. With the default keeper, 100 tenants
// and 11 past days each holding one discarded dead letter of every
// tenant (a deployment's first pass after retention was turned on, or
// after a long pause), one pass empties the 11 days: 1,100 dead letters,
// 1,100 tenant rows. The dashboard of someone who sees every tenant then
// says 1,000 were removed; the audit log says 1,100.
//
// Expected: the dashboard's figure is the pass's whole count in the
// viewer's tenants (e.g. read by pass, not by a row limit, or from the
// runs' own rows when the viewer sees every tenant they name).
func TestRevOps20LastPurgeUndercountsAWidePass(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	var tenants []string
	for i := range 100 {
		tenants = append(tenants, fmt.Sprintf("t20d-%03d", i))
	}
	var letters []testfactory.Letter
	for day := 100; day < 111; day++ {
		for _, tenant := range tenants {
			letters = append(letters, testfactory.Letter{Tenant: tenant, ItemType: "orders.refund", At: r.daysAgo(day),
				OperationID: fmt.Sprintf("op-%s-%d", tenant, day)})
		}
	}
	ids := testfactory.DeadLetters(t, r.db.Pool, letters...)
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusDiscarded, ids...)
	require.Equal(t, int64(1100), r.pass(t).Removed(), "precondition: one pass removed the 1,100")
	var audited int64
	require.NoError(t, r.db.Pool.QueryRow(context.Background(),
		`SELECT coalesce(sum((after->>'rows')::bigint), 0) FROM audit_log WHERE action = $1`, dlq.ActionPurgeTenant).Scan(&audited))
	require.Equal(t, int64(1100), audited, "the tenants' audit rows say 1,100")

	d, err := dlq.NewStore(r.db.Pool).Dashboard(context.Background(), dlq.DashboardQuery{Tenants: tenants, Now: time.Now()})
	require.NoError(t, err)
	assert.Equal(t, int64(1100), d.LastPurge.Rows,
		"the dashboard's last purge, for a viewer of every tenant, counts only the newest 1,000 of the pass's tenant rows")
}
