package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevUx9EditThatLetsNothingGoIsStuck: in a draft, a schema_invalid
// item is left out "until edited" (error-class-fix), so the confirm page
// offers its payload form. But the same item also lacks Dlq-Principal,
// which a revalidate replay needs: edited, it is judged again and left out
// for that (no-principal). The edit is kept all the same: the draft reads
// "A payload was edited: this request needs one approver who sees the
// change" and lists the diff of an item it will not send, the flash says
// only "Payload saved", and the item's form, with its Undo edit button, is
// gone (selectEditable/selectLivePayloads take only error-class-fix items
// left out), so the edit can be neither undone nor changed. An edit kept
// on an item left out must at least be undoable from the page (or not be
// kept), and the flash must not read as plain success.
func TestRevUx9EditThatLetsNothingGoIsStuck(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	bad := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "accounts.permission_grant", MsgID: "grant-np",
		Class: "schema_invalid", Error: "schema", Payload: []byte(`{"grant":"x"}`)}) // no Dlq-Principal
	good := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "accounts.permission_grant", MsgID: "grant-ok",
		Class: "transient", Principal: "user:1", Error: "timeout", Payload: []byte(`{"grant":"y"}`)})
	path := draftPage(t, b, oncall, bad, good)
	d := b.Do(t, oncall, "GET", path, nil, nil).Doc(t)
	edit := fmt.Sprintf(`form[data-testid="payload-edit-form"][action$="/items/%d/payload"]`, bad)
	require.Equal(t, 1, d.Find(edit).Length(), "the page offers an edit to let the schema_invalid item go")
	action, _ := d.Find(edit).Attr("action")

	resp := b.Do(t, oncall, "POST", action, url.Values{"payload": {`{"grant":"fixed"}`}, "reason": {"fix schema"}}, nil)
	if resp.Status != http.StatusSeeOther {
		// A fix may refuse an edit that lets nothing go, saying why.
		assert.Contains(t, resp.Body, "principal", "a refused edit says what still leaves the item out")
		return
	}
	d = b.Do(t, oncall, "GET", path, nil, nil).Doc(t)
	require.Contains(t, d.Find(`[data-testid="replay-group"]`).Text(), "no original principal", "the item is still left out, now for another rule")
	if d.Find(fmt.Sprintf(`[data-testid="payload-diff"][data-dead-letter="%d"]`, bad)).Length() == 0 {
		return // a fix may drop an edit that lets nothing go
	}
	assert.NotEqual(t, "Payload saved: the request now needs one approver who sees the change.", textOf(d, `[data-testid="flash"]`),
		"the flash says the item is still left out, not a plain success")
	assert.Equal(t, 1, d.Find(edit+` [data-testid="payload-undo"]`).Length(),
		"an edit kept on an item left out can be undone from the page")
}
