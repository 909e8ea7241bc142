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

// TestRevUx9UndoEditPublishesUnannounced: a rebuildable request waits for
// an approver only because a payload was edited. On its page the edit
// form offers "Undo edit", whose hint says only that approvals stop
// counting and the item is judged again. Pressed, the request is approved
// on the spot and its items go to the workers: a publish, without the
// "publishes as soon as you submit" warning the confirm page gives, or
// any confirmation. The form must say, before the press, that undoing
// the edit approves and publishes this request at once.
func TestRevUx9UndoEditPublishesUnannounced(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "doc-undo", nil)
	confirm := draftPage(t, b, oncall, id)
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	action, ok := d.Find(`form[data-testid="payload-edit-form"]`).Attr("action")
	require.True(t, ok, "the draft offers the payload form")
	resp := b.Do(t, oncall, "POST", action, url.Values{"payload": {`{"x":2}`}, "reason": {"try v2"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	resp = b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"reindex"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	reqPath := strings.SplitN(resp.Header.Get("Location"), "?", 2)[0]

	page := b.Do(t, oncall, "GET", reqPath, nil, nil).Doc(t)
	require.Contains(t, textOf(page, `[data-testid="replay-status"]`), "pending approval", "it waits for an approver, for the edit")
	form := page.Find(fmt.Sprintf(`form[data-testid="payload-edit-form"][action$="/items/%d/payload"]`, id))
	require.Equal(t, 1, form.Find(`[data-testid="payload-undo"]`).Length())
	said := strings.ToLower(text(form))

	// What the press does: approved, and it runs.
	resp = b.Do(t, oncall, "POST", fmt.Sprintf("%s/items/%d/payload", reqPath, id), url.Values{"reason": {"back"}, "undo": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	after := b.Do(t, oncall, "GET", reqPath, nil, nil).Doc(t)
	require.Contains(t, textOf(after, `[data-testid="flash"]`), "it is approved and runs")

	assert.True(t, strings.Contains(said, "publish") || strings.Contains(said, "approved") || strings.Contains(said, "runs"),
		"before the press, the Undo edit form says the request then needs no approval and publishes at once: %q", said)
}
