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
	"github.com/quarantine-console/quarantine/views"
)

// TestDeadLetterTrailNamesAnotherDeadLetterOfTheMessage: a message
// dead-lettered twice on one subject is one message, and the page of its
// second dead letter shows what was done to the first, saying which dead
// letter it was done to (linked); the page's own rows name nothing more.
func TestDeadLetterTrailNamesAnotherDeadLetterOfTheMessage(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	letter := testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "evt-2002", Subject: "app.acme.orders.index"}
	ids := testfactory.DeadLetters(t, b.Pool, letter, letter)
	first, again := ids[0], ids[1]

	for _, id := range ids {
		resp := b.Do(t, oncall, "POST", fmt.Sprintf("/deadletters/%d/discard", id),
			url.Values{"reason": {fmt.Sprintf("discarded #%d", id)}, views.ConfirmedField: {"1"}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	}

	page := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d", again), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	abouts := map[string]string{}
	page.Doc(t).Find(`[data-testid="dl-audit-row"]`).Each(func(_ int, r *goquery.Selection) {
		reason := strings.TrimSpace(r.Find(`td[data-label="Reason"]`).Text())
		about := r.Find(`[data-testid="dl-audit-about"]`)
		href, _ := about.Find("a").Attr("href")
		abouts[reason] = strings.Join(strings.Fields(about.Text()), " ") + " " + href
	})
	assert.Equal(t, map[string]string{
		fmt.Sprintf("discarded #%d", first): fmt.Sprintf("about dead letter #%d /deadletters/%d", first, first),
		fmt.Sprintf("discarded #%d", again): " ",
	}, abouts, "the first dead letter's discard names it; this one's own names nothing")
}
