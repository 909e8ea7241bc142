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

// TestRevUx9UndoEditOfferedWhereAlwaysRefused: a schema_invalid item goes
// only edited. Once its request waits for approval, undoing the edit is
// always refused (JudgeUndo: "without its edit the rules refuse this item
// ... so it keeps the edit"), and the request page knows it (it judges
// each shown item now). Yet the item's form offers "Undo edit", whose
// hint promises it "puts back the payload as received"; the press comes
// back 422. An action the rules will refuse is not offered (or the form
// says beforehand that it cannot be undone, and why).
func TestRevUx9UndoEditOfferedWhereAlwaysRefused(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "doc-schema",
		Class: "schema_invalid", Error: "bad field", Payload: []byte(`{"doc":"bad"}`)})
	confirm := draftPage(t, b, oncall, id)
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	action, ok := d.Find(`form[data-testid="payload-edit-form"]`).Attr("action")
	require.True(t, ok, "the draft offers the edit that lets it go")
	resp := b.Do(t, oncall, "POST", action, url.Values{"payload": {`{"doc":"good"}`}, "reason": {"fix the field"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	resp = b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"reindex"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	reqPath := strings.SplitN(resp.Header.Get("Location"), "?", 2)[0]
	page := b.Do(t, oncall, "GET", reqPath, nil, nil).Doc(t)
	require.Contains(t, textOf(page, `[data-testid="replay-status"]`), "pending approval")

	press := b.Do(t, oncall, "POST", fmt.Sprintf("%s/items/%d/payload", reqPath, id), url.Values{"reason": {"oops"}, "undo": {"1"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, press.Status, "the rules refuse the undo")
	require.Contains(t, press.Body, "so it keeps the edit")

	form := page.Find(fmt.Sprintf(`form[data-testid="payload-edit-form"][action$="/items/%d/payload"]`, id))
	if form.Find(`[data-testid="payload-undo"]`).Length() == 1 {
		assert.Contains(t, strings.ToLower(text(form)), "cannot be undone",
			"an Undo edit the rules always refuse is not offered as if it worked")
	}
}
