package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestDashboardLastPurgeTellsNothingOfOtherTenants: the dashboard's "last
// purge" read the runs' audit rows, which name every tenant, and showed a
// tenant's viewers when the newest pass ran even when it removed none of
// theirs: that another tenant's dead letters went then. It reads the
// tenants' own rows now.
func TestDashboardLastPurgeTellsNothingOfOtherTenants(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ids := testfactory.DeadLetters(t, r.db.Pool,
		testfactory.Letter{Tenant: "globex", ItemType: "orders.refund", At: r.daysAgo(40), OperationID: "op-g1"},
		testfactory.Letter{Tenant: "globex", ItemType: "orders.refund", At: r.daysAgo(40), OperationID: "op-g2"},
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", At: r.daysAgo(1), OperationID: "op-a1"})
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusDiscarded, ids...)
	require.Equal(t, int64(2), r.pass(t).Removed(), "precondition: the pass removed globex's two")

	st := dlq.NewStore(r.db.Pool)
	dash := func(tenants ...string) dlq.LastPurge {
		d, err := st.Dashboard(context.Background(), dlq.DashboardQuery{Tenants: tenants, Now: time.Now()})
		require.NoError(t, err)
		return d.LastPurge
	}
	assert.Zero(t, dash("acme"), "acme's viewers learn that a pass removed another tenant's dead letters")
	g := dash("globex")
	assert.Equal(t, int64(2), g.Rows)
	assert.False(t, g.At.IsZero())
	assert.Equal(t, int64(2), dash("acme", "globex").Rows)
}
