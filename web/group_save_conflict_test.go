package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// formPageValues is the fields of the form a refused save comes back
// with, as a browser would send them again.
func formPageValues(t *testing.T, d *goquery.Document) url.Values {
	t.Helper()
	form := d.Find(`[data-testid="form-page"]`)
	require.Equal(t, 1, form.Length(), "the form comes back")
	values := url.Values{}
	form.Find(`input[name]`).Each(func(_ int, in *goquery.Selection) {
		values.Set(in.AttrOr("name", ""), in.AttrOr("value", ""))
	})
	form.Find(`textarea[name]`).Each(func(_ int, ta *goquery.Selection) {
		values.Set(ta.AttrOr("name", ""), ta.Text())
	})
	form.Find(`select[name]`).Each(func(_ int, sel *goquery.Selection) {
		chosen := sel.Find(`option[selected]`)
		if chosen.Length() == 0 {
			chosen = sel.Find(`option`).First()
		}
		values.Set(sel.AttrOr("name", ""), chosen.AttrOr("value", ""))
	})
	return values
}

// TestGroupSaveConflictShowsWhatChangedAndKeepsWhatWasTyped: a panel
// drawn before a colleague changed the note, saved with the note and the
// owner changed, writes nothing in the tenant (no owner, no audit row) and
// comes back as a conflict (409): the note as typed, a message at it with
// the colleague's note and who changed the group, the owner as typed, and
// note_was as the group holds it now, so that Save again writes the typed
// note over what the person has now seen. A field the person left alone
// never conflicts: a save of the owner alone from a panel drawn before the
// colleague's ticket keeps their ticket.
func TestGroupSaveConflictShowsWhatChangedAndKeepsWhatWasTyped(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	other, colleague := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "gsc-note", nil)
	fp, action, first := panelForm(t, b, oncall)
	first.Set("note", "shard 3 flaps")
	require.Equal(t, http.StatusSeeOther, b.Do(t, oncall, "POST", action, first, nil).Status)

	_, action, mine := panelForm(t, b, oncall)
	_, _, theirs := panelForm(t, b, other)
	theirs.Set("note", "do not replay: INC-42 double charges")
	require.Equal(t, http.StatusSeeOther, b.Do(t, other, "POST", action, theirs, nil).Status)

	mine.Set("note", "shard 3 flaps; replaying at 03:10")
	mine.Set("owner", "search-team")
	audited := b.AuditCount(t, "object_id = $1", fp)
	resp := b.Do(t, oncall, "POST", action, mine, nil)
	require.Equal(t, http.StatusConflict, resp.Status, resp.Body)
	owner, note, _, _ := triageOf(t, b, oncall, fp)
	assert.Equal(t, "do not replay: INC-42 double charges", note, "the colleague's note is kept")
	assert.Empty(t, owner, "nothing of the save is written, the owner neither")
	assert.Equal(t, audited, b.AuditCount(t, "object_id = $1", fp), "no audit row for a write that did not happen")

	d := resp.Doc(t)
	msg := textOf(d, `[data-testid="field-error-note"]`)
	assert.Contains(t, msg, "Nothing was saved")
	assert.Contains(t, msg, "“do not replay: INC-42 double charges”")
	assert.Contains(t, msg, colleague.Actor.Attribution(), "who changed the group last")
	assert.Zero(t, d.Find(`[data-testid="field-error-owner"]`).Length(), "the owner was not changed meanwhile")
	again := formPageValues(t, d)
	assert.Equal(t, "shard 3 flaps; replaying at 03:10", again.Get("note"), "the note as typed")
	assert.Equal(t, "search-team", again.Get("owner"), "the owner as typed")
	assert.Equal(t, "do not replay: INC-42 double charges", again.Get("note_was"), "the form now stands on the note as it is")

	t.Run("SaveAgainWritesOverWhatWasSeen", func(t *testing.T) {
		resp := b.Do(t, oncall, "POST", action, again, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		owner, note, _, _ := triageOf(t, b, oncall, fp)
		assert.Equal(t, "shard 3 flaps; replaying at 03:10", note)
		assert.Equal(t, "search-team", owner)
	})

	t.Run("UnchangedFieldNeverConflicts", func(t *testing.T) {
		_, action, mine := panelForm(t, b, oncall)
		_, _, theirs := panelForm(t, b, other)
		theirs.Set("ticket", "https://tickets.example/INC-42")
		require.Equal(t, http.StatusSeeOther, b.Do(t, other, "POST", action, theirs, nil).Status)
		mine.Set("owner", "payments-team")
		resp := b.Do(t, oncall, "POST", action, mine, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		owner, _, ticket, _ := triageOf(t, b, oncall, fp)
		assert.Equal(t, "payments-team", owner)
		assert.Equal(t, "https://tickets.example/INC-42", ticket, "the colleague's ticket is kept")
	})
}
