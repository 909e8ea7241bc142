package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevUx9ConfirmPageLosesReasonAndBackAfterEdit: the list's Replay…
// carries the reason typed there and the filtered list to go back to
// (?reason=…&back=…) to the confirm page, which shows them. A payload
// edit on that page (the draft's own form) redirects to the bare batch
// address: the reason is gone from the textarea and "Back to dead
// letters" leads to the unfiltered list instead of the one the on-call
// came from.
func TestRevUx9ConfirmPageLosesReasonAndBackAfterEdit(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "doc-keep", nil)
	list := "/deadletters?type=search.index_update"
	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(id)}, "reason": {"consumer fixed in 2.1"}, "return_to": {list}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := resp.Header.Get("Location")
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	require.Equal(t, "consumer fixed in 2.1", strings.TrimSpace(d.Find(`[data-testid="replay-reason"]`).Text()), "the reason comes along")
	require.Equal(t, list, d.Find(`[data-testid="replay-back"]`).First().AttrOr("href", ""), "and the list to go back to")

	form := d.Find(`form[data-testid="payload-edit-form"]`)
	action, ok := form.Attr("action")
	require.True(t, ok)
	// As a browser sends the form: with the page's reason in its body
	// (replay_reason), which its address no longer carries.
	resp = b.Do(t, oncall, "POST", action, editFormFields(form, url.Values{"payload": {`{"x":2}`}, "reason": {"v2"}}), nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	d = b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
	assert.Equal(t, "consumer fixed in 2.1", strings.TrimSpace(d.Find(`[data-testid="replay-reason"]`).Text()),
		"the reason carried from the list is kept after an edit")
	assert.Equal(t, list, d.Find(`[data-testid="replay-back"]`).First().AttrOr("href", ""),
		"Back still leads to the filtered list")
}
