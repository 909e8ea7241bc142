package web_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixWeb14GroupsPagePastTheEndLeadsToTheFirst: a groups page past the
// last keeps the count of what the filter matches, says the page is past
// the last, and leads to the first page (and back to the last).
func TestFixWeb14GroupsPagePastTheEndLeadsToTheFirst(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed: upstream 503",
		Class: "transient"})

	resp := b.Do(t, oncall, http.MethodGet, "/groups?sort=count&page=3", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	assert.Equal(t, "1 group", strings.Join(strings.Fields(byID(d, "group-count").Text()), " "))
	assert.Equal(t, "Page 3 is past the last page (1 group)", strings.TrimSpace(byID(d, "past-end").Find(".empty__title").Text()))
	first, _ := byID(d, "past-end-first").Attr("href")
	assert.Equal(t, "/groups?sort=count", first, "the first page of the same filter")
	prev, _ := byID(d, "pager-prev").Attr("href")
	assert.Equal(t, "/groups?sort=count", prev, "the page before is the last one")
	assert.Zero(t, byID(d, "pager-next").Length(), "no page after")

	// A filter that matches nothing still says so, on any page.
	none := b.Do(t, oncall, http.MethodGet, "/groups?class=permanent&page=2", nil, nil).Doc(t)
	assert.Equal(t, "0 groups", strings.Join(strings.Fields(byID(none, "group-count").Text()), " "))
	assert.Contains(t, none.Find("main").Text(), "No error groups match")
	assert.Zero(t, byID(none, "past-end").Length())
}

// TestFixWeb14GroupsPageKnowsItsOwnParameters: the groups page refuses a
// parameter it does not know (422 naming it, no row, no action), takes
// every one of its own, and its rows' offers take theirs.
func TestFixWeb14GroupsPageKnowsItsOwnParameters(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed: upstream 503",
		Class: "transient"})

	ok := b.Do(t, oncall, http.MethodGet, "/groups?tenant=acme&type=orders.refund&class=transient&state=all&sort=count&page=1", nil, nil)
	require.Equal(t, http.StatusOK, ok.Status, ok.Body)
	d := ok.Doc(t)
	require.Equal(t, 1, byID(d, "group-row").Length())
	offer, _ := byID(d, "group-replay-offer").Attr("hx-get")
	require.NotEmpty(t, offer)
	assert.Equal(t, http.StatusOK, b.Do(t, oncall, http.MethodGet, offer, nil, nil).Status, "the row's offer takes its own parameters")

	bad := b.Do(t, oncall, http.MethodGet, "/groups?state=all&x=1&tenants=acme", nil, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	d = bad.Doc(t)
	assert.Zero(t, byID(d, "group-row").Length(), "nothing listed")
	assert.Contains(t, byID(d, "filter-errors").Text(), `The groups page has no filter "tenants", "x"`)
	assert.Equal(t, http.StatusUnprocessableEntity, b.Do(t, oncall, http.MethodGet, offer+"&page=2", nil, nil).Status,
		"the offer has no page")
}

// TestFixWeb14GroupOfferOfAGroupResolvedSinceSaysSo: a row's replay offer,
// opened after the group's dead letters were resolved (by someone else,
// in another tab), says the group is unresolved here no more and to
// reload (200), rather than an error of the server; a group of another
// tenant is still not found.
func TestFixWeb14GroupOfferOfAGroupResolvedSinceSaysSo(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", Error: "index shard 9 unavailable"})
	d := b.Do(t, oncall, http.MethodGet, "/groups", nil, nil).Doc(t)
	offer, _ := byID(d, "group-replay-offer").Attr("hx-get")
	require.NotEmpty(t, offer)

	resp := b.Do(t, oncall, "POST", "/deadletters/discard", map[string][]string{"id": {strconv.FormatInt(id, 10)}, "reason": {"dup"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	gone := b.Do(t, oncall, http.MethodGet, offer, nil, nil)
	require.Equal(t, http.StatusOK, gone.Status, gone.Body)
	g := gone.Doc(t)
	assert.Contains(t, byID(g, "group-replay-gone").Text(), "reload the page")
	assert.Zero(t, byID(g, "group-replay").Length(), "no replay offered")

	globex, _ := b.SignIn(t, "globex:oncall")
	assert.Equal(t, http.StatusNotFound, b.Do(t, globex, http.MethodGet, offer, nil, nil).Status,
		"a group of acme, asked by globex")
}
