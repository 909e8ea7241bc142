package dlq_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevGroups22SampleOfAnItemTypeTheFilterLeavesOut: the groups page
// filtered to one item type lists a group's counters of that item type
// only (its row says so: ItemTypes), and its sample (error, stack head and
// the link to it) is to be one of those dead letters. Group "refund
// failed" of acme has orders.refund dead letters (an old unresolved one,
// and the newest, resolved) and an orders.charge one in between. Retention
// removes the resolved refund past 30 days: the recorded sample of the
// refund counters is gone, and the fallback (the group's newest dead
// letter in the row's first tenant) ignores the filter's item type: the
// page filtered to orders.refund shows, and links to, the orders.charge
// dead letter as the group's sample, though the unresolved orders.refund
// one is there.
func TestRevGroups22SampleOfAnItemTypeTheFilterLeavesOut(t *testing.T) {
	t.Parallel()
	r := setupRetentionWith(t, `
[retention]
closed = "30d"
unresolved = "never"
`)
	ctx := context.Background()
	refundOld := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", At: r.daysAgo(40)})
	charge := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.charge", At: r.daysAgo(35)})
	refundNew := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", At: r.daysAgo(33)})
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusResolved, refundNew)

	r.pass(t)
	require.ElementsMatch(t, []int64{refundOld, charge}, r.remaining(t, []int64{refundOld, charge, refundNew}),
		"retention removed the resolved refund past 30 days, nothing else")

	st := dlq.NewStore(r.db.Pool)
	page, err := st.Groups(ctx, dlq.GroupFilter{Tenants: []string{"acme"}, ItemType: "orders.refund"})
	require.NoError(t, err)
	require.Len(t, page.Groups, 1)
	g := page.Groups[0]
	require.Equal(t, []string{"orders.refund"}, g.ItemTypes, "the row is the group's orders.refund dead letters")
	require.EqualValues(t, 1, g.Unresolved)

	d, err := st.Get(ctx, g.SampleID)
	require.NoError(t, err)
	assert.Equal(t, "orders.refund", d.ItemType,
		"the sample of a row filtered to orders.refund is dead letter #%d of item type %s (the unresolved orders.refund one is #%d)",
		g.SampleID, d.ItemType, refundOld)
}
