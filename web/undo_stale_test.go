package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// editForm is the payload form of dead letter dl on page d.
func editForm(d *goquery.Document, dl int64) *goquery.Selection {
	return d.Find(fmt.Sprintf(`form[data-testid="payload-edit-form"][action*="/items/%d/payload"]`, dl))
}

// TestUndoOnAStaleConsoleIsNotPromised: a rebuildable request waits for
// approval only for its edit, and its page offers "Undo edit and replay
// now". Another console then activates a newer policy: this one approves
// nothing, so its page no longer offers the undo and says why; a press
// from the page read before is refused (409) with the request's page and
// a message that the edit was not undone, and why.
func TestUndoOnAStaleConsoleIsNotPromised(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "stale-undo", nil)
	confirm := draftPage(t, b, oncall, id)
	action, ok := editForm(b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t), id).Attr("action")
	require.True(t, ok)
	require.Equal(t, http.StatusSeeOther, b.Do(t, oncall, "POST", action, url.Values{"payload": {`{"x":2}`}, "reason": {"v2"}}, nil).Status)
	resp := b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"reindex"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	reqPath := strings.SplitN(resp.Header.Get("Location"), "?", 2)[0]
	before := editForm(b.Do(t, oncall, "GET", reqPath, nil, nil).Doc(t), id)
	require.Equal(t, "Undo edit and replay now", text(before.Find(`[data-testid="payload-undo"]`)))

	src, err := os.ReadFile(testfactory.PolicyFile())
	require.NoError(t, err)
	newer, err := replaypolicy.Parse("newer.toml", []byte(strings.Replace(string(src), "default_rate = 500", "default_rate = 400", 1)))
	require.NoError(t, err)
	require.NoError(t, replay.New(b.DB.Pool, replay.Config{Policy: func() *replaypolicy.Table { return newer }}).ActivatePolicy(context.Background(), "newer-host"))

	form := editForm(b.Do(t, oncall, "GET", reqPath, nil, nil).Doc(t), id)
	assert.Zero(t, form.Find(`[data-testid="payload-undo"]`).Length(), "no undo is offered that would be refused")
	refused := text(form.Find(`[data-testid="payload-undo-refused"]`))
	assert.Contains(t, refused, "This edit cannot be undone from this console now")
	assert.Contains(t, refused, "is not the active one")

	resp = b.Do(t, oncall, "POST", before.AttrOr("action", ""), url.Values{"reason": {"as received"}, "undo": {"1"}}, nil)
	require.Equal(t, http.StatusConflict, resp.Status, resp.Body)
	page := resp.Doc(t)
	assert.Contains(t, textOf(page, `[data-testid="replay-status"]`), "pending approval", "the request's page, as it is")
	assert.Contains(t, textOf(page, `[data-testid="flash"]`), "The edit was not undone: this process's replay policy")
	form = editForm(page, id)
	assert.Contains(t, text(form), "The edit was not undone", "beside the form too")
	assert.Zero(t, form.Find(`[data-testid="payload-undo"]`).Length())
	assert.Equal(t, "This edit cannot be undone from this console now: the message above says why.", text(form.Find(`[data-testid="payload-undo-refused"]`)),
		"said once in the form")
}
