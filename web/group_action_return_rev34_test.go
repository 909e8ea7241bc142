package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev34GroupActionsComeBackToTheGroupsPage: a group's Discard…,
// Mark resolved… and Replay unresolved… on the groups page went, for
// their confirmation's Back and after it, to the group's list of dead
// letters, empty once the group is closed: the on-call's groups filter,
// sort and page were lost after every group action. Each form now names
// the groups page it is on, and the action comes back to it; a return_to
// that is not the groups page is not taken.
func TestRev34GroupActionsComeBackToTheGroupsPage(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	var letters []testfactory.Letter
	for i := range 3 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("rev34-grp-%d", i),
			Error: "index shard 9 read only"})
	}
	testfactory.DeadLetters(t, b.Pool, letters...)
	const page = "/groups?sort=count&state=unresolved"

	groups := b.Do(t, oncall, http.MethodGet, page, nil, nil)
	require.Equal(t, http.StatusOK, groups.Status, groups.Body)
	d := groups.Doc(t)
	form := d.Find(`[data-testid="group-discard"]`).First().Closest("form")
	require.Equal(t, 1, form.Length(), "the row offers Discard…")
	assert.Equal(t, page, form.Find(`input[name="return_to"]`).AttrOr("value", ""), "the form names the page it is on")
	for _, id := range []string{"group-resolve", "group-replay-draft"} {
		assert.Equal(t, page, d.Find(`[data-testid="`+id+`"]`).First().Closest("form").Find(`input[name="return_to"]`).AttrOr("value", ""), id)
	}
	offer := d.Find(`[data-testid="group-replay-offer"]`).First().AttrOr("hx-get", "")
	require.NotEmpty(t, offer)
	judged := b.Do(t, oncall, http.MethodGet, offer, nil, map[string]string{"HX-Request": "true", "HX-Current-URL": b.URL() + page})
	require.Equal(t, http.StatusOK, judged.Status, judged.Body)
	assert.Equal(t, page, judged.Doc(t).Find(`[data-testid="group-replay"]`).Closest("form").Find(`input[name="return_to"]`).AttrOr("value", ""),
		"the replay offer judged when the menu opens names the page too")

	action := form.AttrOr("action", "")
	refused := b.Do(t, oncall, http.MethodPost, action, url.Values{"return_to": {"/audit/export.csv"}}, nil)
	require.Equal(t, http.StatusOK, refused.Status, refused.Body)
	assert.NotContains(t, refused.Doc(t).Find(`[data-testid="confirm-back"]`).AttrOr("href", ""), "/audit", "a return_to that is not the groups page is not taken")

	confirm := b.Do(t, oncall, http.MethodPost, action, url.Values{"return_to": {page}}, nil)
	require.Equal(t, http.StatusOK, confirm.Status, confirm.Body)
	c := confirm.Doc(t)
	assert.Equal(t, page, c.Find(`[data-testid="confirm-back"]`).AttrOr("href", ""), "Back goes to the groups page")
	done := url.Values{"reason": {"shard 9 rebuilt"}, "confirmed": {"1"}}
	c.Find(`form[data-testid="confirm-form"] input[type="hidden"]`).Each(func(_ int, s *goquery.Selection) {
		done.Add(s.AttrOr("name", ""), s.AttrOr("value", ""))
	})
	closed := b.Do(t, oncall, http.MethodPost, "/deadletters/discard", done, nil)
	require.Equal(t, http.StatusSeeOther, closed.Status, closed.Body)
	assert.Equal(t, page, closed.Header.Get("Location"), "the discard ends on the groups page")
}
