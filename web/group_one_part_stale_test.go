package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestGroupOwnerAndNoteFormsRefuseAStaleWrite: the one-part forms
// (/groups/owner, /groups/note: scripts and older pages) judge a write
// against what the form showed, as the panel does, when it says so
// (owner_was, note_was, ticket_was): a colleague's owner or note set
// since then is not overwritten blind. The form comes back (409) with
// what was typed, a message at the field naming what the group holds now
// and who changed it, and the *_was fields as the group is now; nothing is
// written or audited; Save again writes the typed value. A form without
// the *_was fields writes as before.
func TestGroupOwnerAndNoteFormsRefuseAStaleWrite(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	other, colleague := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "one-part-stale", nil)
	fp, _, _ := panelForm(t, b, oncall)
	form := func(v url.Values) url.Values {
		v.Set("tenant", "acme")
		v.Set("group", fp)
		v.Set("return_to", "/groups")
		return v
	}
	for _, tc := range []struct {
		name, path, field, typed, now string
		blind, sent                   url.Values
	}{
		{"Owner", "/groups/owner", "owner", "payments-team", "search-team",
			url.Values{"owner": {"search-team"}}, url.Values{"owner": {"payments-team"}, "owner_was": {""}}},
		{"Note", "/groups/note", "note", "replaying at 03:10", "do not replay: INC-42",
			url.Values{"note": {"do not replay: INC-42"}, "ticket": {""}},
			url.Values{"note": {"replaying at 03:10"}, "note_was": {""}, "ticket": {""}, "ticket_was": {""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The colleague's write, blind (no *_was): written as before.
			require.Equal(t, http.StatusSeeOther, b.Do(t, other, "POST", tc.path, form(tc.blind), nil).Status)
			audited := b.AuditCount(t, "object_id = $1", fp)
			resp := b.Do(t, oncall, "POST", tc.path, form(tc.sent), nil)
			require.Equal(t, http.StatusConflict, resp.Status, resp.Body)
			owner, note, _, _ := triageOf(t, b, oncall, fp)
			assert.Equal(t, tc.now, map[string]string{"owner": owner, "note": note}[tc.field], "the colleague's %s is kept", tc.field)
			assert.Equal(t, audited, b.AuditCount(t, "object_id = $1", fp), "no audit row for a write that did not happen")

			d := resp.Doc(t)
			msg := textOf(d, `[data-testid="field-error-`+tc.field+`"]`)
			assert.Contains(t, msg, "Nothing was saved")
			assert.Contains(t, msg, "“"+tc.now+"”", "what the group holds now")
			assert.Contains(t, msg, colleague.Actor.Attribution(), "who changed the group last")
			again := formPageValues(t, d)
			assert.Equal(t, tc.typed, again.Get(tc.field), "what was typed is kept")
			assert.Equal(t, tc.now, again.Get(tc.field+"_was"), "the form now stands on the group as it is")

			resp = b.Do(t, oncall, "POST", tc.path, again, nil)
			require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
			owner, note, _, _ = triageOf(t, b, oncall, fp)
			assert.Equal(t, tc.typed, map[string]string{"owner": owner, "note": note}[tc.field], "Save again writes what was typed")
		})
	}
}
