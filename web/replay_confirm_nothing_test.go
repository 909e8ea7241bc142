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

// pageForm is the form of d's replay confirm page as the browser sends it
// (its inputs as shown), with the fields of extra set.
func pageForm(d *goquery.Document, extra url.Values) url.Values {
	form := url.Values{}
	d.Find(`[data-testid="replay-confirm-form"] input`).Each(func(_ int, s *goquery.Selection) {
		form.Set(s.AttrOr("name", ""), s.AttrOr("value", ""))
	})
	for k, v := range extra {
		form[k] = v
	}
	return form
}

// TestConfirmNothingToRequestHasNoSubmitAndABackLink: an on-call selects
// two manual dead letters from a filtered list (manual allows no bulk:
// nothing can be replayed). The confirm page, before and after the 422
// that refuses the submit, offers no "Request replay" button (it could
// only be refused again) and leads back to the list as it was filtered.
func TestConfirmNothingToRequestHasNoSubmitAndABackLink(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	r1 := seed(t, b, "acme", "orders.refund", "refund-1", nil)
	r2 := seed(t, b, "acme", "orders.refund", "refund-2", nil)
	list := "/deadletters?type=orders.refund"
	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(r1), fmt.Sprint(r2)}, "return_to": {list}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := resp.Header.Get("Location")
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	assert.Zero(t, d.Find(`[data-testid="replay-submit"]`).Length(), "the page of a selection with nothing to request offers to request it")
	assert.Equal(t, list, d.Find(`[data-testid="replay-back"]`).AttrOr("href", ""))

	resp = b.Do(t, oncall, "POST", strings.SplitN(confirm, "?", 2)[0], pageForm(d, url.Values{"reason": {"payments gateway back"}}), nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	back := resp.Doc(t)
	assert.Contains(t, textOf(back, `[data-testid="flash"]`), "Nothing was requested")
	assert.Zero(t, back.Find(`[data-testid="replay-submit"]`).Length(), "the 422 page still offers \"Request replay\"")
	assert.Equal(t, list, back.Find(`[data-testid="replay-back"]`).AttrOr("href", ""), "the 422 page has no way back to the selection")
}
