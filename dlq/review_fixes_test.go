package dlq_test

// Review (rev-fixes): neighbouring paths of this session's fixes.

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

// TestDashboardCountsEveryRunOfTheLastPass: 9996b33 makes a pass split
// its runs so that each audit row names every tenant it removed, because
// "the dashboard told their viewers retention removed 0 of theirs
// (scanLastPurge)". The dashboard still reads only the newest purge row
// (selectLastPurge, LIMIT 1): a tenant whose dead letters went in an
// earlier run of the same pass (any pass of more than one run: more than
// 200 tenant/status pairs, more than BatchRows rows, a day emptied whole
// and rows) is told "last purge: just now, 0 of yours".
func TestDashboardCountsEveryRunOfTheLastPass(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	const tenants = 201
	ls := make([]testfactory.Letter, tenants)
	for i := range ls {
		ls[i] = testfactory.Letter{Tenant: fmt.Sprintf("t%03d", i), ItemType: "orders.refund", At: r.daysAgo(40),
			OperationID: fmt.Sprintf("op-%d", i)}
	}
	ids := testfactory.DeadLetters(t, r.db.Pool, ls...)
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusDiscarded, ids...)
	pass := r.pass(t)
	require.Equal(t, int64(tenants), pass.Removed())
	require.Greater(t, len(pass.Runs), 1, "precondition: the pass took more than one run")

	st := dlq.NewStore(r.db.Pool)
	zero := 0
	for i := range tenants {
		tenant := fmt.Sprintf("t%03d", i)
		d, err := st.Dashboard(context.Background(), dlq.DashboardQuery{Tenants: []string{tenant}, Now: time.Now()})
		require.NoError(t, err)
		if d.LastPurge.Rows != 1 {
			zero++
		}
	}
	assert.Zero(t, zero, "tenants told the last purge removed none of theirs, though the last pass removed one of each")
}
