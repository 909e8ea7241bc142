package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixWeb13UnknownListParameterIsRefused: a parameter that is neither a
// filter of the dead letter list nor the page's own is refused, naming it
// and the filters there are, by the list, its count fragment and each
// action by filter; a poll's mark is the page's own.
func TestFixWeb13UnknownListParameterIsRefused(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed"})
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}

	t.Run("List", func(t *testing.T) {
		resp := b.Do(t, oncall, http.MethodGet, "/deadletters?type=orders.refund&opid=op-1", nil, page)
		assert.Equal(t, http.StatusUnprocessableEntity, resp.Status)
		d := resp.Doc(t)
		assert.Zero(t, byID(d, "deadletter-row").Length(), "nothing is listed")
		assert.Zero(t, byID(d, "bulk-all").Length(), "no action by filter is offered")
		assert.Contains(t, d.Text(), `The dead letter list has no filter "opid"; it filters by q, tenant, type, class, status`)
		assert.Contains(t, d.Text(), "op_id")
	})
	t.Run("Count", func(t *testing.T) {
		resp := b.Do(t, oncall, http.MethodGet, "/deadletters/count?typ=orders.refund", nil, page)
		assert.Equal(t, http.StatusUnprocessableEntity, resp.Status)
		assert.Contains(t, byID(resp.Doc(t), "deadletter-count-problem").Text(), `no filter "typ"`)
	})
	t.Run("ActionsByFilter", func(t *testing.T) {
		for _, path := range []string{"/deadletters/discard/filter", "/deadletters/resolve/filter", "/replay/filter"} {
			resp := b.Do(t, oncall, http.MethodPost, path+"?type=orders.refund&opid=op-1", url.Values{"reason": {"incident"}}, page)
			assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, path)
			assert.Contains(t, resp.Body, `no filter &#34;opid&#34;`, path)
		}
	})
	t.Run("PollMarkIsThePagesOwn", func(t *testing.T) {
		resp := b.Do(t, oncall, http.MethodGet, "/deadletters?type=orders.refund&poll=1", nil, page)
		assert.Equal(t, http.StatusOK, resp.Status)
		assert.Equal(t, 1, byID(resp.Doc(t), "deadletter-row").Length())
	})
}

// TestFixWeb13BlankFilterIsNoFilter: a filter whose only values are spaces
// selects everything (the list reads them trimmed), so an action by filter
// refuses it as no filter, and the list does not offer one.
func TestFixWeb13BlankFilterIsNoFilter(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed"})
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}
	q := "?" + url.Values{"q": {"   "}, "type": {" "}}.Encode()

	list := b.Do(t, oncall, http.MethodGet, "/deadletters"+q, nil, page)
	require.Equal(t, http.StatusOK, list.Status)
	assert.Zero(t, byID(list.Doc(t), "bulk-all").Length(), "a list filtered by spaces is the whole list: no action on all of it")
	for _, path := range []string{"/deadletters/discard/filter", "/deadletters/resolve/filter", "/replay/filter"} {
		resp := b.Do(t, oncall, http.MethodPost, path+q, url.Values{"reason": {"incident"}}, page)
		assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, path)
		assert.Contains(t, resp.Body, "Filter the list first", path)
	}
	var status string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&status))
	assert.Equal(t, "quarantined", status)
}

// TestFixWeb13ListLinksKeepWorking: every link and form the filtered list
// builds (pager, presets, count, "count them", group chip, clear, the
// actions by filter) carries only what the list knows: none is refused.
func TestFixWeb13ListLinksKeepWorking(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	letters := make([]testfactory.Letter, 55)
	for i := range letters {
		letters[i] = testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed: gateway timeout"}
	}
	testfactory.DeadLetters(t, b.Pool, letters...)
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}

	var fp string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT fingerprint FROM dead_letters WHERE tenant = 'acme' LIMIT 1`).Scan(&fp))
	for _, start := range []string{
		"/deadletters?type=orders.refund&status=unresolved",
		"/deadletters?q=gateway&tenant=acme",
		"/deadletters?group=" + fp + "&tenant=acme",
	} {
		resp := b.Do(t, oncall, http.MethodGet, start, nil, page)
		require.Equal(t, http.StatusOK, resp.Status, start)
		d := resp.Doc(t)
		var gets []string
		d.Find(`#results a[href^="/deadletters"], .filters a[href^="/deadletters"], [hx-get^="/deadletters"]`).Each(func(_ int, s *goquery.Selection) {
			gets = append(gets, s.AttrOr("href", s.AttrOr("hx-get", "")))
		})
		require.NotEmpty(t, byID(d, "pager-next").AttrOr("href", ""), start)
		require.Greater(t, len(gets), 5, start)
		for _, link := range gets {
			if strings.HasPrefix(link, "/deadletters/") && !strings.HasPrefix(link, "/deadletters/count") {
				continue // a dead letter's page
			}
			got := b.Do(t, oncall, http.MethodGet, link, nil, page)
			assert.Equal(t, http.StatusOK, got.Status, "%s: link %s", start, link)
		}
		d.Find(`[data-testid="bulk-all"] form`).Each(func(_ int, s *goquery.Selection) {
			action := s.AttrOr("action", "")
			got := b.Do(t, oncall, http.MethodPost, action, url.Values{"reason": {"incident"}}, page)
			assert.Contains(t, []int{http.StatusOK, http.StatusSeeOther}, got.Status, "%s: action %s", start, action)
		})
		assert.Equal(t, 3, d.Find(`[data-testid="bulk-all"] form`).Length(), start)
	}
}
