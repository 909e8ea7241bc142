package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb25GroupNoteShownAsText: a group's note (and owner) is text a person of
// the tenant typed, read by everyone who may read the tenant (an auditor
// or an admin of every tenant too): the groups page writes it as text
// (views.Untrusted), markup shown as typed, a direction control as its
// marker, nothing of it executable.
func TestRevWeb25GroupNoteShownAsText(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetters(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Class: "permanent", Error: "refund failed"})
	group := dlq.Fingerprint(dlq.ClassPermanent, "refund failed", "")

	note := `<img src=x onerror=alert(1)> see ` + "\u202e" + `kcatta`
	resp := b.Do(t, c, http.MethodPost, "/groups/note", url.Values{"tenant": {"acme"}, "group": {group}, "note": {note}, "return_to": {"/groups"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	owner := `<b>mallory</b>` + "\u200b"
	resp = b.Do(t, c, http.MethodPost, "/groups/owner", url.Values{"tenant": {"acme"}, "group": {group}, "owner": {owner}, "return_to": {"/groups"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	page := b.Do(t, c, http.MethodGet, "/groups", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	d := page.Doc(t)
	require.Equal(t, 1, d.Find(`[data-testid="group-note"]`).Length(), "the group's note is on the page")
	assertNothingExecutable(t, d, page.Body)
	assert.Equal(t, `<img src=x onerror=alert(1)> see <U+202E>kcatta`, text(d.Find(`[data-testid="group-note"]`)),
		"the note as typed, as text, its direction control as its marker")
	assert.Equal(t, `owner <b>mallory</b><U+200B>`, text(d.Find(`[data-testid="group-owner"]`)), "the owner as typed, as text")
	assert.Zero(t, d.Find(`[data-testid="group-owner"] b`).Length(), "no element of the owner's text")
}
