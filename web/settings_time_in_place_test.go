package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestTimeZoneSavedOnAPagePostRenderedKeepsThePage: an on-call is on a
// page a POST rendered (the discard confirmation, a reason typed), opens
// the menu under their name and saves "my browser's zone". The form went
// to the page above (a GET page), and the confirmation and what was
// typed on it were gone. On such a page the form saves in place: sent
// by htmx, the setting is saved and the answer is the message alone, with
// no redirect and no flash left for the next page. A GET page's form
// still comes back to the page.
func TestTimeZoneSavedOnAPagePostRenderedKeepsThePage(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "orders.refund", "refund-1", nil)
	dl := "/deadletters/" + strconv.FormatInt(id, 10)

	confirm := b.Do(t, oncall, "POST", dl+"/discard", url.Values{"reason": {"duplicate of ord-1"}}, nil)
	require.Equal(t, http.StatusOK, confirm.Status, confirm.Body)
	form := confirm.Doc(t).Find(`[data-testid="time-zone-form"]`)
	require.Equal(t, 1, form.Length())
	assert.Equal(t, "/settings/time", form.AttrOr("hx-post", ""), "the time zone form of a page a POST rendered leaves the page")
	back := form.Find(`input[name="return_to"]`).AttrOr("value", "")

	saved := b.Do(t, oncall, "POST", "/settings/time", url.Values{"time_zone": {"local"}, "return_to": {back}},
		map[string]string{"HX-Request": "true", "HX-Current-URL": b.URL() + dl + "/discard"})
	require.Equal(t, http.StatusOK, saved.Status, "saved in place, not sent to %q", saved.Header.Get("Location"))
	assert.Empty(t, saved.Header.Get("Location"))
	assert.Contains(t, saved.Body, "your browser&#39;s zone")

	list := b.Do(t, oncall, "GET", "/deadletters", nil, nil).Doc(t)
	assert.Equal(t, "local", list.Find("html").AttrOr("data-time-zone", ""), "the setting is saved")
	assert.Zero(t, list.Find(`[data-testid="flash"]`).Length(), "the message was shown in place, not kept for the next page: %q",
		textOf(list, `[data-testid="flash"]`))
	get := list.Find(`[data-testid="time-zone-form"]`)
	_, inPlace := get.Attr("hx-post")
	assert.False(t, inPlace, "a GET page's form comes back to the page")

	refused := b.Do(t, oncall, "POST", "/settings/time", url.Values{"time_zone": {"mars"}}, map[string]string{"HX-Request": "true"})
	assert.Equal(t, http.StatusUnprocessableEntity, refused.Status)
	assert.Contains(t, refused.Body, "Choose UTC or your browser")
}
