package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// offerOf is the replay item of the groups page row (or rows) as its menu
// fetches it when opened: the row's group-replay-offer placeholder names
// the fragment (hx-get), read as who. Rows of several groups give their
// offers one after another.
func offerOf(t *testing.T, b *testfactory.Console, who *http.Client, rows *goquery.Selection) *goquery.Selection {
	t.Helper()
	var out *goquery.Selection
	rows.Each(func(_ int, r *goquery.Selection) {
		url, ok := r.Find(`[data-testid="group-replay-offer"]`).Attr("hx-get")
		require.True(t, ok, "the row's menu names where its replay offer is read")
		resp := b.Do(t, who, "GET", url, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		offer := resp.Doc(t).Find(`[data-testid="group-replay-offer"][data-judged]`)
		require.Equal(t, 1, offer.Length(), resp.Body)
		if out == nil {
			out = offer
		} else {
			out = out.AddSelection(offer)
		}
	})
	require.NotNil(t, out, "no row")
	return out
}

// TestGroupOfferIsReadWhenTheMenuOpens: the groups page judges no group's
// replay (judging every shown group's candidates cost seconds a page at a
// million dead letters, bench-ui); each row's menu carries a draft
// button that works without scripts and fetches the judged offer when it
// is opened. The fragment says what the page said before: the count that
// can go, or why no group replay.
func TestGroupOfferIsReadWhenTheMenuOpens(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	for i := range 3 {
		testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update",
			MsgID: fmt.Sprintf("lazy-index-%d", i), Error: "index shard 7 unavailable"})
	}
	page := b.Do(t, oncall, "GET", "/groups", nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	row := page.Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, row.Length())
	assert.Zero(t, row.Find(`[data-testid="group-replay"]`).Length(), "the page itself judges nothing")
	draft := row.Find(`[data-testid="group-replay-draft"]`)
	require.Equal(t, 1, draft.Length(), "without scripts the menu still leads to the replay's draft")
	action, _ := draft.Closest("form").Attr("action")
	assert.True(t, strings.HasPrefix(action, "/replay/filter?"), action)
	trigger, _ := row.Find(`[data-testid="group-replay-offer"]`).Attr("hx-trigger")
	assert.Equal(t, "toggle once from:closest details", trigger)

	offer := offerOf(t, b, oncall, row)
	assert.Equal(t, "Replay 3 that can go…", strings.TrimSpace(offer.Find(`[data-testid="group-replay"]`).Text()))
	offerAction, _ := offer.Find(`[data-testid="group-replay"]`).Closest("form").Attr("action")
	assert.Equal(t, action, offerAction, "the judged offer replays what the page's button would")
}

// TestGroupOfferOfAnotherTenantIsNotFound: the offer of a group only
// another tenant has is a 404, as any object outside the person's
// tenants; a broken link is a 422, not a query.
func TestGroupOfferOfAnotherTenantIsNotFound(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update",
		MsgID: "lazy-globex", Error: "index shard 9 unavailable"})
	admin, _ := b.SignIn(t, "globex:oncall")
	row := b.Do(t, admin, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, row.Length())
	url, _ := row.Find(`[data-testid="group-replay-offer"]`).Attr("hx-get")
	require.NotEmpty(t, url)

	acme, _ := b.SignIn(t, "acme:oncall")
	assert.Equal(t, http.StatusNotFound, b.Do(t, acme, "GET", url, nil, nil).Status, "a group of globex, asked by acme")
	assert.Equal(t, http.StatusUnprocessableEntity, b.Do(t, acme, "GET", "/groups/offer?group=not-a-fingerprint", nil, nil).Status)
	assert.Equal(t, http.StatusUnprocessableEntity, b.Do(t, acme, "GET", "/groups/offer?group=abcdef12&tenant=%00", nil, nil).Status)
}
