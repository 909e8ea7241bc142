package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevUx9PendingPagePollMissesNewIntent: a request waiting for
// approval polls its progress every 5 s so that "an approval elsewhere
// changes the page"; the poll reloads the page only when the status moved
// (?seen=<status>). The requester then edits a payload: a new intent, the
// approvals deleted, a diff the approver must read. The status is still
// pending_approval, so the approver's open page is never refreshed: it
// keeps showing the old payload, no "Edited" notice and an Approve form
// for the old intent. (A first approval of a two-approver request, "1 of
// 2", is missed the same way.) The poll must reload a page whose request
// changed, not only one whose status did.
func TestRevUx9PendingPagePollMissesNewIntent(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "accounts.permission_grant", "grant-poll", map[string][]string{dlq.HeaderPrincipal: {"user:9"}})
	reqPath := requestReplay(t, b, oncall, id)

	page := b.Do(t, approver, "GET", reqPath, nil, nil).Doc(t)
	require.Equal(t, 1, page.Find(`[data-testid="approve-form"], form[action$="/approve"]`).Length(), "the approver may approve")
	poll, ok := page.Find(`[data-testid="replay-progress"]`).Attr("hx-get")
	require.True(t, ok, "the pending page polls")
	require.Zero(t, page.Find(`[data-testid="replay-edited"]`).Length())

	resp := b.Do(t, oncall, "POST", fmt.Sprintf("%s/items/%d/payload", reqPath, id), url.Values{"payload": {`{"grant":"admin"}`}, "reason": {"scope"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.Equal(t, 1, b.Do(t, approver, "GET", reqPath, nil, nil).Doc(t).Find(`[data-testid="replay-edited"]`).Length(),
		"the page read now shows the edit")

	got := b.Do(t, approver, "GET", poll, nil, map[string]string{"HX-Request": "true", "Quarantine-Poll": "1"})
	require.Equal(t, http.StatusOK, got.Status, got.Body)
	assert.Equal(t, "true", got.Header.Get("HX-Refresh"),
		"the open page, which shows the old intent without the edit, is reloaded by its poll")
}
