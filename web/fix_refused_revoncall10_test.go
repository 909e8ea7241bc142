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

// TestRevOncall10RefusedFixIsShownOpen: the groups page offers "Record a
// fix of <item type> in <tenant>" for each group (a <details> the on-call
// opens). Submitted without its version or ticket, the fix is refused
// (422) and the console answers with the page of the group's sample dead
// letter, a page the on-call never opened, whose "Record a fix" <details>
// is rendered closed (FixMarkerForm never sets open): the refusal ("Name
// the version or the ticket of the fix.") and the note they typed sit
// inside the collapsed block, and nothing else on the page says that the
// fix was not recorded. Seen in a browser:
// /tmp/rc10/fix-error-from-groups-1024.png (no error visible at all).
// The form that comes back also lost return_to=groups, so the corrected
// submit lands on the dead letter and not on the groups page it came from.
// (Since round 35 the form names the groups page it is on, /groups here.)
//
// Severity: medium. Expected: a refused fix comes back with its form open
// (its errors in view), and still going back where it came from.
func TestRevOncall10RefusedFixIsShownOpen(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	// schema_invalid: the groups page offers a fix where one helps (TestRev43GroupsOfferAFixOnlyWhereItHelps).
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "rvo10-fix", Class: "schema_invalid",
		Error: "boom", Payload: []byte(`{"x":1}`)})

	groups := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t)
	form := groups.Find(fmt.Sprintf(`form[action="/deadletters/%d/fix"]`, id))
	require.Equal(t, 1, form.Length(), "the groups page offers a fix of the group")
	require.Equal(t, "/groups", form.Find(`input[name="return_to"]`).AttrOr("value", ""))

	const note = "relay config rolled back by INC-88"
	resp := b.Do(t, oncall, "POST", fmt.Sprintf("/deadletters/%d/fix", id), url.Values{
		"return_to": {"/groups"}, "scope": {"item_type"}, "fixed_at": {"2026-12-01T08:00"}, "ref": {""}, "note": {note}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	d := resp.Doc(t)
	details := d.Find(`details[data-testid="fix-form"]`)
	require.Equal(t, 1, details.Length(), "the fix form comes back")
	require.Contains(t, details.Find(`[data-testid="fix-error-ref"]`).Text(), "Name the version or the ticket", "the refusal is in the form")
	require.Equal(t, note, details.Find(`input[name="note"]`).AttrOr("value", ""), "the note typed is kept in the form")
	_, open := details.Attr("open")
	assert.True(t, open, "the refused fix's form comes back collapsed: its error and typed values are hidden, and nothing else says the fix was not recorded")
	assert.Equal(t, "/groups", details.Find(`input[name="return_to"]`).AttrOr("value", ""),
		"the form that comes back forgets it came from the groups page")
}
