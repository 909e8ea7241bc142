package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb14GroupsPagePastTheEndSaysNoGroupMatch: a groups page past the
// last one (a "page=2" link kept from before the on-call resolved or
// discarded the groups that were on it, a shared link, the page a row's
// action returns to) says "0 groups" and "No error groups match: Show all
// groups, or clear the filter", while the filter matches groups, on page 1.
// The total is the window count of the rows the page read (count(*) OVER
// () under LIMIT/OFFSET): past the end there is no row to carry it. A
// tired on-call reads an all-clear. The page should count what the filter
// matches and say this page is past its end (with a link to the first),
// as the dead letter list keeps its count on an empty page.
func TestRevWeb14GroupsPagePastTheEndSaysNoGroupMatch(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed: upstream 503",
		Class: "transient"})
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}

	first := b.Do(t, oncall, http.MethodGet, "/groups", nil, page)
	require.Equal(t, http.StatusOK, first.Status, first.Body)
	require.Equal(t, 1, byID(first.Doc(t), "group-row").Length(), "the filter matches one group")

	resp := b.Do(t, oncall, http.MethodGet, "/groups?page=2", nil, page)
	d := resp.Doc(t)
	count := strings.Join(strings.Fields(byID(d, "group-count").Text()), " ")
	assert.NotEqual(t, "0 groups", count, "page 2 of a filter matching 1 group says there are none")
	assert.NotContains(t, d.Find("main").Text(), "No error groups match", "the filter matches a group: it is on page 1")
}
