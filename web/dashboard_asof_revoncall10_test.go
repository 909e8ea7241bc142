package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall10DashboardAsOfFollowsItsRefresh: the dashboard says
// "Unresolved dead letters in your tenants, as of 08:47:49 UTC" and
// refreshes its figures every 30 s (#dashboard, hx-get every 30s,
// hx-select="#dashboard"). The "as of" time is in the page head, outside
// the element each refresh replaces, and nothing else (hx-select-oob)
// refreshes it: an on-call who keeps the dashboard open through the
// night reads "as of 02:10" beside figures of 06:40, and takes fresh
// numbers for stale ones (or compares them with the list as if they were
// hours old). The screens server's dashboard: /tmp/rc10/dash-1024.png
// (the head) and its poll every 30 s.
//
// Severity: low. Expected: the time the page says its figures are "as
// of" is refreshed with them.
func TestRevOncall10DashboardAsOfFollowsItsRefresh(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "rvo10-asof", nil)

	resp := b.Do(t, oncall, "GET", "/", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	poll := d.Find(`#dashboard`)
	require.Equal(t, 1, poll.Length())
	require.Contains(t, poll.AttrOr("hx-trigger", ""), "every", "the dashboard's figures refresh on their own")
	require.Equal(t, "#dashboard", poll.AttrOr("hx-select", ""))

	head := d.Find(`.page-sub`).FilterFunction(func(_ int, s *goquery.Selection) bool { return strings.Contains(s.Text(), "as of") })
	require.Equal(t, 1, head.Length(), "the page says when its figures are from")
	asOf := head.Find("time").AttrOr("datetime", "")
	require.NotEmpty(t, asOf)

	inside := strings.Contains(poll.Text(), "as of")
	oob := false
	for _, sel := range strings.Split(poll.AttrOr("hx-select-oob", ""), ",") {
		if sel = strings.TrimSpace(sel); sel != "" && d.Find(sel).Find("time").Length() > 0 && strings.Contains(d.Find(sel).Text(), "as of") {
			oob = true
		}
	}
	assert.True(t, inside || oob,
		"the dashboard's 'as of %s' is outside what its 30 s refresh replaces: it keeps the first load's time beside refreshed figures", asOf)
}
