package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevLimits22ProducerItemTypesGrowTheDashboard: a producer chooses
// the item type (the subject's tokens after the tenant), and every
// distinct one becomes a counter row (dead_letter_counts), which the
// pages render without a bound:
//
//   - the dashboard's "by item type" table (dlq.Dashboard.ByItemType,
//     web.dimensionRows) has a row, a link and a bar for every item type
//     with unresolved dead letters, and its top groups list every item
//     type of each group (array_agg(DISTINCT item_type)): about 780 bytes
//     per item type. The dashboard is the on-call's home page and polls
//     itself every 30 s: measured at 20,000 item types, 15.5 MB and 1.2 s
//     per render, for every on-call with it open;
//   - the groups page's row lists every item type of the group in one
//     cell and again in its title (a group is an error fingerprint, which
//     no item type is part of), and its filter select, like the dead
//     letter list's, offers every item type of the snapshot (3.2 MB and
//     1.6 MB at 20,000).
//
// The metrics bound item types (MetricItemTypes, then OtherLabel:
// TestReviewItemTypesGrowMetricSeriesUnbounded); the pages do not. A few
// thousand small dead letters under made-up item types (one noisy
// producer, or a bug that puts an id into the subject) make every page an
// on-call opens megabytes.
//
// Severity: medium (every on-call's dashboard and groups page slowed and
// bloated by one producer; grows without bound). Expected: a page's
// size does not grow with the number of item types: the dashboard shows
// the top few item types and says how many more; a group row names a
// few item types and "and N more"; the select offers a bounded list.
func TestRevLimits22ProducerItemTypesGrowTheDashboard(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "it22-base", Payload: []byte(`{}`)})
	pages := []string{"/", "/groups", "/deadletters"}
	size := func(path string) int {
		resp := b.Do(t, oncall, "GET", path, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, path)
		return len(resp.Body)
	}
	before := map[string]int{}
	for _, p := range pages {
		before[p] = size(p)
	}

	const n = 4000 // small dead letters, one item type each, the same error
	letters := make([]testfactory.Letter, n)
	for i := range letters {
		letters[i] = testfactory.Letter{Tenant: "acme", ItemType: fmt.Sprintf("orders.refund-%06d", i), MsgID: fmt.Sprintf("it22-%d", i), Payload: []byte(`{}`)}
	}
	testfactory.DeadLetters(t, b.Pool, letters...)

	for _, p := range pages {
		start := time.Now()
		after := size(p)
		t.Logf("%s: %d bytes with 1 item type, %d bytes with %d (%s)", p, before[p], after, n+1, time.Since(start))
		assert.Less(t, after-before[p], 256<<10, "%s grew by %d KiB with %d more item types (%d bytes each)",
			p, (after-before[p])>>10, n, (after-before[p])/n)
	}
}
