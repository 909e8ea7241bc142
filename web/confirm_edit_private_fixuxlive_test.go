package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixUxLiveEditKeepsTheReasonOutOfTheAddress: saving a payload edit
// on the confirm page came back to the page with what its request form
// held in the address (…&rate-4=1&reason=reindex+after+search+outage), so
// the reason typed, and the rates, went to the browser's history and to
// every proxy's and access log on the way; the edit form's own address
// carried the reason too (?replay_reason=…). The form sends them in its
// body, the console keeps them in the session, and no address it writes
// (the edit's redirect, the forms and links of the page it comes back to,
// the page a refused edit answers with) holds them; the page shows the
// reason and the rate as typed all the same.
func TestFixUxLiveEditKeepsTheReasonOutOfTheAddress(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "doc-private", nil)
	const reason = "reindex after search outage INC-4471"
	list := "/deadletters?type=search.index_update"
	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(id)}, "return_to": {list}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	d := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
	form := d.Find(`form[data-testid="payload-edit-form"]`)
	require.Equal(t, 1, form.Length())
	rate := d.Find(`input[name^="rate-"]`)
	require.Equal(t, 1, rate.Length())
	rateName := rate.AttrOr("name", "")
	require.Equal(t, 1, form.Find(`input[name="replay_`+rateName+`"]`).Length(), "the edit form sends the rate typed")
	action := form.AttrOr("action", "")

	// What a browser sends once the person typed the reason and a rate on
	// the page (app.js copies them into the edit form's fields).
	typed := url.Values{"replay_reason": {reason}, "replay_" + rateName: {"0.5"}}
	private := func(t *testing.T, where, addr string) {
		t.Helper()
		assert.NotContains(t, addr, "INC-4471", "%s holds no reason", where)
		assert.NotContains(t, addr, "outage", "%s holds no reason", where)
		assert.NotContains(t, addr, "rate-", "%s holds no rate", where)
		assert.NotContains(t, addr, "0.5", "%s holds no rate", where)
	}
	addresses := func(t *testing.T, d *goquery.Document) {
		t.Helper()
		d.Find(`form[action]`).Each(func(_ int, f *goquery.Selection) { private(t, "a form's action", f.AttrOr("action", "")) })
		d.Find(`a[href]`).Each(func(_ int, a *goquery.Selection) { private(t, "a link", a.AttrOr("href", "")) })
		private(t, "the page's own address", d.Find("body").AttrOr("data-canonical", ""))
	}

	t.Run("Saved", func(t *testing.T) {
		resp := b.Do(t, oncall, "POST", action, editFormFields(form, url.Values{"payload": {`{"x":2}`}, "reason": {"v2"}, "replay_reason": typed["replay_reason"],
			"replay_" + rateName: typed["replay_"+rateName]}), nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		loc := resp.Header.Get("Location")
		private(t, "the redirect", loc)
		assert.True(t, strings.HasPrefix(loc, "/replay/batches/"), loc)
		back := b.Do(t, oncall, "GET", loc, nil, nil)
		require.Equal(t, http.StatusOK, back.Status, back.Body)
		page := back.Doc(t)
		assert.Equal(t, reason, textOf(page, `textarea#reason`), "the reason typed is in the form")
		assert.Equal(t, "0.5", page.Find(`input[name="`+rateName+`"]`).AttrOr("value", ""), "and the rate")
		assert.Equal(t, list, page.Find(`[data-testid="replay-back"]`).First().AttrOr("href", ""), "Back still leads to the list it came from")
		assert.Equal(t, reason, page.Find(`form[data-testid="payload-edit-form"] input[name="replay_reason"]`).AttrOr("value", ""),
			"the next edit sends it again, in its body")
		addresses(t, page)

		again := b.Do(t, oncall, "GET", loc, nil, nil).Doc(t)
		assert.Equal(t, reason, textOf(again, `textarea#reason`), "a reload shows it again")
	})
	t.Run("Refused", func(t *testing.T) {
		resp := b.Do(t, oncall, "POST", action, editFormFields(form, url.Values{"payload": {`{"x":3}`}, "reason": {""}, "replay_reason": typed["replay_reason"],
			"replay_" + rateName: typed["replay_"+rateName]}), nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
		page := resp.Doc(t)
		assert.Equal(t, reason, textOf(page, `textarea#reason`), "the refused edit's page keeps the reason typed")
		addresses(t, page)
	})
}
