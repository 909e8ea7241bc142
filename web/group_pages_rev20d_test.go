package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall20GroupPagesDropAGroupTriagedMeanwhile: 101 error groups
// with one unresolved dead letter each; the groups page lists 100 and
// links "page 2". The on-call works down page 1 and discards one group
// (its row leaves the "with unresolved" view), then clicks Next: page 2
// is read with OFFSET 100 over the order as it is now, every group after
// the discarded one has moved up a place, and the 101st group, which was
// on page 2 when the link was made, is now the 100th: on neither page the
// on-call saw. The dead letter list pages by keyset for exactly this
// (rows moving while paging); the groups page pages by offset
// (validateGroupFilter, GroupFilter.Offset).
//
// Expected: paging on from page 1 (its Next link) shows every group page
// 1 did not (a keyset cursor on the order's columns: unresolved, n,
// fingerprint), and its Previous link leads back to the groups before.
func TestRevOncall20GroupPagesDropAGroupTriagedMeanwhile(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	word := func(i int) string { return string(rune('a'+i/26)) + string(rune('a'+i%26)) }
	var letters []testfactory.Letter
	for i := range 101 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("rev20d-g-%d", i),
			Error: "index shard " + word(i) + " unavailable"})
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	_, err := dlq.FoldCounters(context.Background(), b.Pool)
	require.NoError(t, err)

	fps := func(path string) []string {
		var out []string
		b.Do(t, oncall, "GET", path, nil, nil).Doc(t).Find(`[data-testid="group-row"]`).Each(func(_ int, s *goquery.Selection) {
			out = append(out, s.AttrOr("data-fingerprint", ""))
		})
		return out
	}
	first1 := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t)
	page1 := fps("/groups")
	require.Len(t, page1, 100)
	next, ok := first1.Find(`[data-testid="pager-next"]`).Attr("href")
	require.True(t, ok, "page 1 of 101 groups links the next")

	// The on-call discards the first group of page 1 (its one dead letter).
	var first int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT id FROM dead_letters WHERE fingerprint = $1`, page1[0]).Scan(&first))
	require.Contains(t, ids, first)
	testfactory.SetStatus(t, b.Pool, dlq.StatusDiscarded, first)
	_, err = dlq.FoldCounters(context.Background(), b.Pool)
	require.NoError(t, err)

	page2 := fps(next)
	second := b.Do(t, oncall, "GET", next, nil, nil).Doc(t)
	assert.Equal(t, "100–100 of 100 groups", strings.Join(strings.Fields(second.Find(`[data-testid="group-count"]`).Text()), " "),
		"numbered by its place now")
	prev, ok := second.Find(`[data-testid="pager-prev"]`).Attr("href")
	require.True(t, ok)
	assert.Equal(t, page1[1:], fps(prev), "back: the groups before, as they are now")
	seen := map[string]bool{}
	for _, fp := range append(page1, page2...) {
		seen[fp] = true
	}
	var all []string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT array_agg(DISTINCT fingerprint) FROM dead_letters WHERE msg_id LIKE 'rev20d-g-%'`).Scan(&all))
	require.Len(t, all, 101)
	var missed []string
	for _, fp := range all {
		if !seen[fp] {
			missed = append(missed, fp)
		}
	}
	assert.Empty(t, missed, "a group unresolved throughout is on neither page 1 (read before) nor page 2 (read after one group of page 1 was discarded)")
}
