package dlq_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestGroupSampleFallbackObeysTheFilter: when a group row's recorded
// sample was purged, its sample is the newest dead letter the row counts
// (TestRevGroups22SampleOfAnItemTypeTheFilterLeavesOut: of the filter's
// item type): the newest across every tenant of the row, not its first
// tenant's, and on a page of unresolved groups an unresolved one.
func TestGroupSampleFallbackObeysTheFilter(t *testing.T) {
	t.Parallel()
	const policy = `
[retention]
closed = "30d"
unresolved = "never"
`
	ctx := context.Background()
	sample := func(t *testing.T, r *retention, f dlq.GroupFilter) int64 {
		t.Helper()
		page, err := dlq.NewStore(r.db.Pool).Groups(ctx, f)
		require.NoError(t, err)
		require.Len(t, page.Groups, 1)
		return page.Groups[0].SampleID
	}

	t.Run("NewestAcrossTheRowsTenants", func(t *testing.T) {
		t.Parallel()
		r := setupRetentionWith(t, policy)
		acme := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", At: r.daysAgo(40)})
		globex := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "globex", ItemType: "orders.refund", At: r.daysAgo(36)})
		recorded := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", At: r.daysAgo(33)})
		testfactory.SetStatus(t, r.db.Pool, dlq.StatusResolved, recorded)
		r.pass(t)
		require.ElementsMatch(t, []int64{acme, globex}, r.remaining(t, []int64{acme, globex, recorded}))

		got := sample(t, r, dlq.GroupFilter{Tenants: []string{"acme", "globex"}, ItemType: "orders.refund"})
		assert.Equal(t, globex, got, "the newest of the row's tenants (globex's), not acme's #%d", acme)
	})

	t.Run("UnresolvedOnAPageOfUnresolvedGroups", func(t *testing.T) {
		t.Parallel()
		r := setupRetentionWith(t, policy)
		open := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", At: r.daysAgo(40)})
		closed := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", At: r.daysAgo(20)})
		recorded := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", At: r.daysAgo(33)})
		testfactory.SetStatus(t, r.db.Pool, dlq.StatusResolved, closed, recorded)
		r.pass(t)
		require.ElementsMatch(t, []int64{open, closed}, r.remaining(t, []int64{open, closed, recorded}))

		assert.Equal(t, open, sample(t, r, dlq.GroupFilter{Tenants: []string{"acme"}, Unresolved: true}),
			"a page of unresolved groups shows an unresolved sample")
		assert.Equal(t, closed, sample(t, r, dlq.GroupFilter{Tenants: []string{"acme"}}),
			"a page of every group shows the newest")
	})
}
