package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestRevGov9OnlyThisRequestersRequestsListsOtherPeople: on the replays
// page a requester's name links to "Only this requester's requests"
// (replayRow's RequesterURL), but the link is the Requester filter with the
// requester's email, which matches every request whose requester's email
// STARTS with it, verified or not (lower(requester_email) LIKE
// 'dana@example.com%'). So dana@example.com's link lists the requests of
// dana@example.community (another person) and of an account that merely
// claims dana's address unverified, all under the title "only this
// requester": an approver or auditor checking what one person asked for is
// shown other people's requests as theirs.
func TestRevGov9OnlyThisRequestersRequestsListsOtherPeople(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	dana, _ := b.SignInAs(t, testidp.Person{ID: "dana", Email: "dana@example.com", EmailVerified: true}, "acme:oncall")
	other, _ := b.SignInAs(t, testidp.Person{ID: "other", Email: "dana@example.community", EmailVerified: true}, "acme:oncall")
	claimant, _ := b.SignInAs(t, testidp.Person{ID: "claimant", Email: "dana@example.com", EmailVerified: false}, "acme:oncall")
	reader, _ := b.SignIn(t, "acme:approver")

	danas := requestReplay(t, b, dana, seed(t, b, "acme", "search.index_update", "by-dana", nil))
	requestReplay(t, b, other, seed(t, b, "acme", "search.index_update", "by-other", nil))
	requestReplay(t, b, claimant, seed(t, b, "acme", "search.index_update", "by-claimant", nil))

	list := b.Do(t, reader, "GET", views.PathReplays, nil, nil)
	require.Equal(t, http.StatusOK, list.Status, list.Body)
	var link string
	list.Doc(t).Find(`[data-testid="replay-row"]`).Each(func(_ int, row *goquery.Selection) {
		if href, _ := row.Find(`a.row-link`).Attr("href"); href == danas {
			link, _ = row.Find(`[data-testid="replay-row-requester"] a`).Attr("href")
		}
	})
	require.NotEmpty(t, link, "dana's row links to only her requests")
	only := b.Do(t, reader, "GET", link, nil, nil)
	require.Equal(t, http.StatusOK, only.Status, only.Body)
	var listed []string
	only.Doc(t).Find(`[data-testid="replay-row"] a.row-link`).Each(func(_ int, a *goquery.Selection) {
		href, _ := a.Attr("href")
		listed = append(listed, href)
	})
	assert.Equal(t, []string{danas}, listed, "%q, titled \"Only this requester's requests\", lists other people's requests too: %s",
		link, strings.Join(listed, ", "))
}
