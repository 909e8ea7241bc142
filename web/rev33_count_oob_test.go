package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevUX33LateCountSwapsOnlyItsOwnFilter: the list fetches a costly
// count after the page, and the answer fills "All N matching" out of band,
// by id. htmx swaps such an element wherever its id is found, so a count
// that came back after the person changed the filter wrote the old
// filter's number into the new list's menu ("1,204 dead letters", "All 37
// matching"). The element's id now names the filter: a count answers only
// the menu of the filter it counted.
func TestRevUX33LateCountSwapsOnlyItsOwnFilter(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{ItemType: "search.index_update", MsgID: "rr33-oob-1", Payload: []byte(`{}`)},
		testfactory.Letter{ItemType: "email.send", MsgID: "rr33-oob-2", Payload: []byte(`{}`)})

	menuID := func(query string) string {
		t.Helper()
		d := b.Do(t, oncall, "GET", "/deadletters"+query, nil, nil).Doc(t)
		id, ok := d.Find(`[data-testid="bulk-matching"]`).Attr("id")
		require.True(t, ok, "the list of %s offers All matching", query)
		return id
	}
	countID := func(query string) string {
		t.Helper()
		resp := b.Do(t, oncall, "GET", "/deadletters/count"+query, nil, map[string]string{"HX-Request": "true"})
		require.Equal(t, http.StatusOK, resp.Status)
		span := resp.Doc(t).Find(`[data-testid="bulk-matching"][hx-swap-oob]`)
		require.Equal(t, 1, span.Length(), "the count fills the menu out of band")
		assert.Equal(t, "1", strings.TrimSpace(span.Text()))
		id, _ := span.Attr("id")
		return id
	}
	index, email := "?type=search.index_update", "?type=email.send"
	assert.Equal(t, menuID(index), countID(index), "a count fills its own filter's menu")
	assert.NotEqual(t, menuID(email), countID(index), "and never another filter's")
}
