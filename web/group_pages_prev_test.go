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

// TestGroupPreviousToAPageDealtWithShowsTheFirst: page 2's Previous link
// reads the groups before its first; when every one of them was dealt
// with meanwhile, none is before it, and the page it leads to is the
// first page as it is now, not "past the last page".
func TestGroupPreviousToAPageDealtWithShowsTheFirst(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, _ := b.SignIn(t, "acme:oncall")
	var letters []testfactory.Letter
	for i := range 101 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("prev-g-%d", i),
			Error: fmt.Sprintf("index shard %c%c unavailable", 'a'+i/26, 'a'+i%26)})
	}
	testfactory.DeadLetters(t, b.Pool, letters...)
	_, err := dlq.FoldCounters(ctx, b.Pool)
	require.NoError(t, err)

	next, ok := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="pager-next"]`).Attr("href")
	require.True(t, ok)
	second := b.Do(t, oncall, "GET", next, nil, nil).Doc(t)
	rest := second.Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, rest.Length())
	prev, ok := second.Find(`[data-testid="pager-prev"]`).Attr("href")
	require.True(t, ok)

	// Every group of page 1 is discarded meanwhile.
	var page1 []int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT array_agg(id) FROM dead_letters WHERE msg_id LIKE 'prev-g-%' AND fingerprint <> $1`,
		rest.AttrOr("data-fingerprint", "")).Scan(&page1))
	require.Len(t, page1, 100)
	testfactory.SetStatus(t, b.Pool, dlq.StatusDiscarded, page1...)
	_, err = dlq.FoldCounters(ctx, b.Pool)
	require.NoError(t, err)

	back := b.Do(t, oncall, "GET", prev, nil, nil)
	require.Equal(t, 200, back.Status)
	doc := back.Doc(t)
	assert.Zero(t, doc.Find(`[data-testid="past-end"]`).Length(), "no page is past the end: the first is")
	assert.Equal(t, []string{rest.AttrOr("data-fingerprint", "")}, doc.Find(`[data-testid="group-row"]`).Map(func(_ int, s *goquery.Selection) string {
		return s.AttrOr("data-fingerprint", "")
	}))
	assert.Equal(t, "1 group", strings.Join(strings.Fields(doc.Find(`[data-testid="group-count"]`).Text()), " "))
	assert.Zero(t, doc.Find(`[data-testid="pager-prev"]`).Length(), "nothing before the first page")
}
