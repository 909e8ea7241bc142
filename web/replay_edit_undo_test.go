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

// TestPayloadEditUndoButton: an edited item's form offers "Undo edit";
// pressed (with a reason), it puts back the payload received, the flash
// says so (and not that the request needs an approver for a change), and
// the page no longer shows the item edited nor the button.
func TestPayloadEditUndoButton(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "accounts.permission_grant", "grant-undo", map[string][]string{dlq.HeaderPrincipal: {"user:9"}})
	reqPath := requestReplay(t, b, oncall, id)
	edit := fmt.Sprintf("%s/items/%d/payload", reqPath, id)

	page := b.Do(t, oncall, "GET", reqPath, nil, nil).Doc(t)
	assert.Zero(t, page.Find(`[data-testid="payload-undo"]`).Length(), "nothing to undo before an edit")
	resp := b.Do(t, oncall, "POST", edit, url.Values{"payload": {`{"grant":"admin"}`}, "reason": {"typo"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	page = b.Do(t, oncall, "GET", reqPath, nil, nil).Doc(t)
	assert.Contains(t, textOf(page, `[data-testid="flash"]`), "Payload saved")
	require.Equal(t, 1, page.Find(`[data-testid="payload-undo"]`).Length())
	assert.Equal(t, 1, page.Find(`[data-testid="payload-diff"]`).Length())

	resp = b.Do(t, oncall, "POST", edit, url.Values{"payload": {`{"grant":"admin"}`}, "reason": {"undo my typo"}, "undo": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	page = b.Do(t, oncall, "GET", reqPath, nil, nil).Doc(t)
	assert.Contains(t, textOf(page, `[data-testid="flash"]`), "Edit undone: the item sends the payload received again")
	assert.Zero(t, page.Find(`[data-testid="payload-undo"]`).Length())
	assert.Zero(t, page.Find(`[data-testid="payload-diff"]`).Length(), "no edit left to show")
	assert.Zero(t, page.Find(`[data-testid="replay-edited"]`).Length(), "the request is no longer edited")
}
