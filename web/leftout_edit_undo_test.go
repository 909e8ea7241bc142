package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestLeftOutEditHasItsUndoOnThePages: two rebuildable items of a draft
// are edited; another request then takes one of them, so the submit
// leaves it out, holding its edit, and is refused. The confirm page, and
// the request's page once it is submitted, show that item's edit with why
// it is left out and an Undo edit (the payload form's action: its
// permission, CSRF and audit), saying beforehand what the undo does; the
// undo drops the edit, the item stays out, and the form is gone.
func TestLeftOutEditHasItsUndoOnThePages(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	_, other := b.SignIn(t, "acme:oncall")
	taken := seed(t, b, "acme", "search.index_update", "leftout-taken", nil)
	kept := seed(t, b, "acme", "search.index_update", "leftout-kept", nil)
	confirm := draftPage(t, b, oncall, taken, kept)
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	for _, dl := range []int64{taken, kept} {
		action, ok := editForm(d, dl).Attr("action")
		require.True(t, ok, "the draft offers the payload form of %d", dl)
		resp := b.Do(t, oncall, "POST", action, url.Values{"payload": {`{"x":2}`}, "reason": {"v2"}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	}
	testfactory.Request(t, b.Replays, other.Actor, []int64{taken}, replay.SubmitInput{Reason: "taken first"})
	resp := b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"reindex"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, "the submit leaves the taken item out and is refused")

	d = b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	form := editForm(d, taken)
	require.Equal(t, 1, form.Length(), "the confirm page offers the left-out item's edit")
	_, leftOut := form.Attr("data-left-out")
	assert.True(t, leftOut)
	assert.Contains(t, text(form.Find(`[data-testid="payload-left-out"]`)), "already holds this dead letter", "why it is left out")
	assert.Equal(t, `{"x":2}`, strings.TrimSpace(form.Find(`[data-testid="payload-edit"]`).Text()), "the edit it holds")
	assert.Zero(t, form.Find(`textarea[name="payload"]`).Length(), "which cannot be changed")
	assert.Zero(t, form.Find(`[data-testid="payload-save"]`).Length())
	assert.Equal(t, "Undo edit", text(form.Find(`[data-testid="payload-undo"]`)))
	assert.Contains(t, text(form.Find(`[data-testid="payload-undo-hint"]`)), "it stays left out, for the same reason")

	resp = b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"reindex"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	reqPath := strings.SplitN(resp.Header.Get("Location"), "?", 2)[0]
	page := b.Do(t, oncall, "GET", reqPath, nil, nil).Doc(t)
	require.Contains(t, textOf(page, `[data-testid="replay-status"]`), "pending approval", "the kept item's edit needs an approver")
	form = editForm(page, taken)
	require.Equal(t, 1, form.Length(), "the request page offers the left-out item's edit")
	require.Equal(t, 1, form.Find(`[data-testid="payload-undo"]`).Length())
	assert.Contains(t, text(form.Find(`[data-testid="payload-undo-hint"]`)), "the item stays left out and sends nothing")

	action := form.AttrOr("action", "")
	resp = b.Do(t, oncall, "POST", action, url.Values{"reason": {"sends nothing"}, "undo": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	page = b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
	assert.Contains(t, textOf(page, `[data-testid="flash"]`), "Edit undone: the item stays left out and sends nothing")
	assert.Zero(t, editForm(page, taken).Length(), "no edit left to undo")
	assert.Equal(t, 1, editForm(page, kept).Length())
}
