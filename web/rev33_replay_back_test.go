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

// TestRevUX33ReplayFromADeadLetterComesBackToIt: "Replay…" on a dead
// letter's page sent no page to come back to, so the confirm page's Back
// led to the whole, unfiltered list. It comes back to the dead letter.
func TestRevUX33ReplayFromADeadLetterComesBackToIt(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "rr33-back", Payload: []byte(`{}`)})
	page := fmt.Sprintf("/deadletters/%d", id)
	form := b.Do(t, oncall, "GET", page, nil, nil).Doc(t).Find(`[data-testid="replay-form"]`)
	require.Equal(t, 1, form.Length())
	values := url.Values{}
	form.Find(`input[type="hidden"]`).Each(func(_ int, in *goquery.Selection) {
		values.Add(in.AttrOr("name", ""), in.AttrOr("value", ""))
	})
	require.Equal(t, page, values.Get("return_to"), "the form says where it came from")

	resp := b.Do(t, oncall, "POST", form.AttrOr("action", ""), values, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status)
	confirm := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil)
	require.Equal(t, http.StatusOK, confirm.Status, "the confirm page")
	back, ok := confirm.Doc(t).Find(`[data-testid="replay-back"]`).Attr("href")
	require.True(t, ok)
	assert.Equal(t, page, back, "Back leads to the dead letter")
}
