package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall12SecondTabSubmitOfNothing: a tired on-call opened the
// replay of one refund (manual: a typed "REPLAY <message id>") in two
// tabs, submitted the first, then the second, its phrase typed. The
// second is refused (422): its one item is held by the first request, so
// nothing is left to replay and the page offers no submit ("Nothing here
// can be requested"). Yet its error summary says "correct what is marked
// below, then request the replay again" and "Confirmation: Type it again:
// what this request replays changed after you typed it", linking
// #f-confirm-N, a field the page does not have (a draft with nothing left
// has no phrase to type). Every link of the summary should lead to
// something on the page, and it should not ask to type again what cannot
// be submitted.
func TestRevOncall12SecondTabSubmitOfNothing(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "two-tabs-refund"})

	// Two tabs, each its own draft of the same dead letter.
	var tabs []string
	for range 2 {
		resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {strconv.FormatInt(id, 10)}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		tabs = append(tabs, resp.Header.Get("Location"))
	}
	forms := make([]url.Values, 2)
	for i, tab := range tabs {
		d := b.Do(t, oncall, "GET", tab, nil, nil).Doc(t)
		f := url.Values{"reason": {"payments gateway back"}}
		d.Find(`[data-testid="replay-confirm-form"] input`).Each(func(_ int, s *goquery.Selection) {
			name, _ := s.Attr("name")
			value, _ := s.Attr("value")
			if strings.HasPrefix(name, "confirm-") {
				phrase := strings.TrimSpace(d.Find(`[data-testid="phrase-` + name + `"]`).Text())
				require.NotEmpty(t, phrase)
				value = phrase
			}
			if name != "" {
				f.Set(name, value)
			}
		})
		forms[i] = f
	}
	resp := b.Do(t, oncall, "POST", tabs[0], forms[0], nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	second := b.Do(t, oncall, "POST", tabs[1], forms[1], nil)
	require.Equal(t, http.StatusUnprocessableEntity, second.Status)
	d := second.Doc(t)
	require.Zero(t, d.Find(`[data-testid="replay-submit"]`).Length(), "nothing left to submit")
	summary := d.Find(`[data-testid="replay-error-summary"]`)
	require.Equal(t, 1, summary.Length())
	summary.Find(`a[href^="#"]`).Each(func(_ int, a *goquery.Selection) {
		href, _ := a.Attr("href")
		assert.Equal(t, 1, d.Find(`[id="`+strings.TrimPrefix(href, "#")+`"]`).Length(),
			"the error summary links %s (%q), which is not on the page", href, strings.TrimSpace(a.Parent().Text()))
	})
	assert.NotContains(t, summary.Text(), "Type it again", "no phrase can be typed for a request with nothing left to replay")
}
