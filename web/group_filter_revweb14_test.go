package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb14GroupsPageMisspeltFilterActsOnEveryTenant: the groups page
// drops a parameter it does not know (a misspelt "tenat=acme" in a shared
// link or a hand-edited URL) and lists, unfiltered, the groups of every
// tenant of the person; each row's Discard…, Mark resolved… and Replay…
// then take the group's dead letters in every tenant it lists, globex
// included, though the link asked for acme. The dead letter list, its
// count, the actions by filter and the audit log refuse such a parameter
// (422 naming it: revweb13 #1, "instead of dropping it and acting on
// everything"); the groups page, whose rows carry actions, and its offer
// fragment should too.
func TestRevWeb14GroupsPageMisspeltFilterActsOnEveryTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	for _, tenant := range []string{"acme", "globex"} {
		testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: tenant, ItemType: "orders.refund", Error: "refund failed: upstream 503",
			Class: "transient"})
	}
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}

	// As typed correctly, the row's discard takes acme alone.
	ok := b.Do(t, oncall, http.MethodGet, "/groups?tenant=acme", nil, page)
	require.Equal(t, http.StatusOK, ok.Status, ok.Body)
	discard, _ := byID(ok.Doc(t), "group-discard").Parent().Attr("action")
	require.NotEmpty(t, discard)
	require.NotContains(t, discard, "globex", "the filtered page's discard takes acme only")

	resp := b.Do(t, oncall, http.MethodGet, "/groups?tenat=acme", nil, page)
	d := resp.Doc(t)
	var takes []string
	if a, found := byID(d, "group-discard").Parent().Attr("action"); found {
		takes = append(takes, a)
	}
	assert.False(t, len(takes) > 0 && strings.Contains(takes[0], "globex"),
		"a misspelt tenant filter offers a Discard… of globex's dead letters too: %v", takes)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "the unknown parameter is refused, as the dead letter list refuses it")
	assert.Contains(t, d.Text(), `"tenat"`, "the refusal names it")

	offer := b.Do(t, oncall, http.MethodGet, "/groups/offer?tenat=acme&group=0123456789abcdef", nil, page)
	assert.Equal(t, http.StatusUnprocessableEntity, offer.Status, "the offer fragment refuses it too")
}
