package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestReplaysPageRequesterIdentityFilter: a requester's link lists that
// identity's requests exactly, says so on the page and offers to remove it;
// the filter form keeps it when another filter is applied; the typed
// requester search stays a search of the email's start; a broken identity
// link is a 422 with a message, not another list.
func TestReplaysPageRequesterIdentityFilter(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, danaUser := b.SignInAs(t, testidp.Person{ID: "dana", Email: "dana@example.com", EmailVerified: true}, "acme:oncall")
	_, other := b.SignInAs(t, testidp.Person{ID: "other", Email: "dana@example.community", EmailVerified: true}, "acme:oncall")
	reader, _ := b.SignIn(t, "acme:approver")

	danas := testfactory.Request(t, b.Replays, danaUser.Actor, []int64{seed(t, b, "acme", "search.index_update", "id-dana", nil)}, replay.SubmitInput{})
	others := testfactory.Request(t, b.Replays, other.Actor, []int64{seed(t, b, "acme", "search.index_update", "id-other", nil)}, replay.SubmitInput{})

	get := func(query string) testfactory.Response {
		t.Helper()
		return b.Do(t, reader, "GET", views.PathReplays+query, nil, nil)
	}
	list := get("")
	link := row(list.Doc(t), danas.ID).Find(`[data-testid="replay-row-requester"] a`).AttrOr("href", "")
	require.NotEmpty(t, link)

	t.Run("Exact", func(t *testing.T) {
		page := b.Do(t, reader, "GET", link, nil, nil)
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		d := page.Doc(t)
		assert.Equal(t, []int64{danas.ID}, listedIDs(d))
		chip := strings.Join(strings.Fields(d.Find(`[data-testid="replay-filter-identity"]`).Text()), " ")
		assert.Contains(t, chip, "dana@example.com", "the page says whose requests it lists")
		assert.Contains(t, chip, danaUser.Issuer+"|"+danaUser.Subject, "and which identity, exactly")
		clear := d.Find(`[data-testid="replay-filter-identity-clear"]`).AttrOr("href", "")
		assert.ElementsMatch(t, []int64{danas.ID, others.ID}, listedIDs(b.Do(t, reader, "GET", clear, nil, nil).Doc(t)), "removed, everyone's again")
		hidden := map[string]string{}
		d.Find(`[data-testid="replay-filter"] input[type="hidden"]`).Each(func(_ int, s *goquery.Selection) {
			hidden[s.AttrOr("name", "")] = s.AttrOr("value", "")
		})
		assert.Equal(t, danaUser.Issuer, hidden["requester_issuer"], "applying another filter keeps it")
		assert.Equal(t, danaUser.Subject, hidden["requester_subject"])
	})

	t.Run("SearchStaysAPrefix", func(t *testing.T) {
		page := get("?requester=" + url.QueryEscape("dana@example.com"))
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		assert.ElementsMatch(t, []int64{danas.ID, others.ID}, listedIDs(page.Doc(t)), "a search of the email's start, as typed")
		assert.Zero(t, page.Doc(t).Find(`[data-testid="replay-filter-identity"]`).Length())
	})

	t.Run("Broken", func(t *testing.T) {
		page := get("?requester_issuer=" + url.QueryEscape(danaUser.Issuer))
		require.Equal(t, http.StatusUnprocessableEntity, page.Status, page.Body)
		assert.NotEmpty(t, textOf(page.Doc(t), `[data-testid="field-error-requester_identity"]`))
	})
}
