package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// panelForm is the acme part of an error group's triage panel as drawn for
// c: the one form's action and its values as a browser would send them
// untouched. fp is the group (the only one in acme).
func panelForm(t *testing.T, b *testfactory.Console, c *http.Client) (fp, action string, values url.Values) {
	t.Helper()
	groups := b.Do(t, c, "GET", "/groups?state=all", nil, nil).Doc(t)
	row := groups.Find(`[data-testid="group-row"]`).First()
	fp = row.AttrOr("data-fingerprint", "")
	link, ok := row.Find(`[data-testid="group-link"]`).Attr("href")
	require.True(t, ok, "the group links to its dead letters")
	page := b.Do(t, c, "GET", link, nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	forms := page.Doc(t).Find(`[data-testid="group-panel-tenant"][data-tenant="acme"] form`)
	require.Equal(t, 1, forms.Length(), "one form in the panel: owner, note, ticket and snooze are saved together")
	form := forms.First()
	values = url.Values{}
	// As a browser sends them: a text input's value without line breaks
	// (HTML strips them), every line break sent as CRLF.
	crlf := strings.NewReplacer("\r\n", "\r\n", "\n", "\r\n", "\r", "\r\n")
	form.Find(`input[name]`).Each(func(_ int, in *goquery.Selection) {
		v := in.AttrOr("value", "")
		if in.AttrOr("type", "text") != "hidden" {
			v = strings.NewReplacer("\r", "", "\n", "").Replace(v)
		}
		values.Set(in.AttrOr("name", ""), crlf.Replace(v))
	})
	form.Find(`textarea[name]`).Each(func(_ int, ta *goquery.Selection) {
		values.Set(ta.AttrOr("name", ""), crlf.Replace(ta.Text()))
	})
	form.Find(`select[name]`).Each(func(_ int, sel *goquery.Selection) {
		chosen := sel.Find(`option[selected]`)
		if chosen.Length() == 0 {
			chosen = sel.Find(`option`).First()
		}
		values.Set(sel.AttrOr("name", ""), chosen.AttrOr("value", ""))
	})
	return fp, form.AttrOr("action", ""), values
}

// triageOf reads what the panel shows as recorded in acme for group fp.
func triageOf(t *testing.T, b *testfactory.Console, c *http.Client, fp string) (owner, note, ticket string, snoozed bool) {
	t.Helper()
	d := b.Do(t, c, "GET", "/deadletters?group="+fp+"&status=unresolved", nil, nil).Doc(t)
	p := d.Find(`[data-testid="group-panel-tenant"][data-tenant="acme"]`)
	return p.Find(`[data-testid="group-owner-input"]`).AttrOr("value", ""), p.Find(`[data-testid="group-note-input"]`).Text(),
		p.Find(`[data-testid="group-ticket-input"]`).AttrOr("value", ""), p.Find(`[data-testid="group-snoozed"]`).Length() > 0
}

// TestFixLeft12PanelSavesEverythingTyped: an on-call types an owner, a note,
// a ticket and a snooze into the group's panel and presses its one Save:
// all of it is saved, one audit row per part; nothing typed is lost to a
// Save of another part.
func TestFixLeft12PanelSavesEverythingTyped(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, me := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "fl12-save", nil)
	fp, action, form := panelForm(t, b, oncall)
	form.Set("owner", "search-team")
	form.Set("note", "shard 7 flaps under reindex load")
	form.Set("ticket", "https://tickets.example/SEARCH-7")
	form.Set("for", "1h")
	resp := b.Do(t, oncall, "POST", action, form, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	b.Do(t, oncall, "GET", "/groups", nil, nil) // the flash is read
	owner, note, ticket, snoozed := triageOf(t, b, oncall, fp)
	assert.Equal(t, "search-team", owner)
	assert.Equal(t, "shard 7 flaps under reindex load", note)
	assert.Equal(t, "https://tickets.example/SEARCH-7", ticket)
	assert.True(t, snoozed)
	for _, action := range []string{"group.assign", "group.note", "group.snooze"} {
		assert.Equal(t, 1, b.AuditCount(t, "action = $1 AND object_id = $2 AND actor_subject = $3", action, fp, me.Subject), action)
	}

	t.Run("UntouchedSavesNothing", func(t *testing.T) {
		before := b.AuditCount(t, "object_id = $1", fp)
		_, action, form := panelForm(t, b, oncall)
		assert.Equal(t, "", form.Get("for"), "the snooze is left as it is until someone chooses")
		resp := b.Do(t, oncall, "POST", action, form, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		assert.Equal(t, before, b.AuditCount(t, "object_id = $1", fp), "nothing changed, nothing audited")
	})
}

// TestFixLeft12PanelBadInputKeepsEverythingTyped: a bad ticket link sent
// with an owner, a note and a snooze is refused whole (422, nothing saved
// or audited) on a page that keeps everything typed, with the message at
// the ticket.
func TestFixLeft12PanelBadInputKeepsEverythingTyped(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "fl12-bad", nil)
	fp, action, form := panelForm(t, b, oncall)
	form.Set("owner", "search-team")
	form.Set("note", "shard 7 flaps")
	form.Set("ticket", "javascript:alert(1)")
	form.Set("grows", "5")
	resp := b.Do(t, oncall, "POST", action, form, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	d := resp.Doc(t)
	assert.NotEmpty(t, textOf(d, `[data-testid="field-error-ticket"]`))
	page := d.Find(`form[data-testid="form-page"]`)
	assert.Equal(t, "search-team", page.Find(`input[name="owner"]`).AttrOr("value", ""))
	assert.Equal(t, "shard 7 flaps", page.Find(`textarea[name="note"]`).Text())
	assert.Equal(t, "javascript:alert(1)", page.Find(`input[name="ticket"]`).AttrOr("value", ""))
	assert.Equal(t, "5", page.Find(`input[name="grows"]`).AttrOr("value", ""))
	assert.Equal(t, action, page.AttrOr("action", ""), "sent again to the same one Save")
	assert.Zero(t, b.AuditCount(t, "object_id = $1", fp), "nothing saved")
	owner, _, _, snoozed := triageOf(t, b, oncall, fp)
	assert.Empty(t, owner)
	assert.False(t, snoozed)

	// Sent again with the link put right: everything typed is saved.
	again := url.Values{}
	page.Find(`input[name]`).Each(func(_ int, in *goquery.Selection) { again.Set(in.AttrOr("name", ""), in.AttrOr("value", "")) })
	page.Find(`textarea[name]`).Each(func(_ int, ta *goquery.Selection) { again.Set(ta.AttrOr("name", ""), ta.Text()) })
	again.Set("for", page.Find(`select[name="for"] option[selected]`).AttrOr("value", ""))
	again.Set("ticket", "https://tickets.example/SEARCH-7")
	resp = b.Do(t, oncall, "POST", action, again, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	owner, note, ticket, snoozed := triageOf(t, b, oncall, fp)
	assert.Equal(t, []any{"search-team", "shard 7 flaps", "https://tickets.example/SEARCH-7", true}, []any{owner, note, ticket, snoozed})
}

// TestFixLeft12PanelKeepsOthersChanges: a Save writes only what the person
// changed in the form: an owner someone else set after the panel was drawn
// is not put back by a Save of the note.
func TestFixLeft12PanelKeepsOthersChanges(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	other, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "fl12-race", nil)
	fp, action, form := panelForm(t, b, oncall)
	resp := b.Do(t, other, "POST", "/groups/owner", url.Values{"tenant": {"acme"}, "group": {fp}, "owner": {"payments-team"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	form.Set("note", "mine")
	resp = b.Do(t, oncall, "POST", action, form, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	owner, note, _, _ := triageOf(t, b, oncall, fp)
	assert.Equal(t, "payments-team", owner, "the owner left alone in the form is not undone")
	assert.Equal(t, "mine", note)
}

// TestFixLeft12PanelWakeAfterSnoozeEndedKeepsTyped: "wake now" chosen with
// a note typed, when the snooze has ended meanwhile, saves nothing and
// shows the form again with the note and a message at the snooze.
func TestFixLeft12PanelWakeAfterSnoozeEndedKeepsTyped(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "fl12-wake", nil)
	fp, _, _ := panelForm(t, b, oncall)
	resp := b.Do(t, oncall, "POST", "/groups/snooze", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {"1h"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	_, action, form := panelForm(t, b, oncall)
	resp = b.Do(t, oncall, "POST", "/groups/wake", url.Values{"tenant": {"acme"}, "group": {fp}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	notes := b.AuditCount(t, "action = 'group.note' AND object_id = $1", fp)

	form.Set("for", "wake")
	form.Set("note", "woken by hand")
	resp = b.Do(t, oncall, "POST", action, form, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	d := resp.Doc(t)
	assert.Contains(t, textOf(d, `[data-testid="field-error-for"]`), "The group is not snoozed.")
	assert.Equal(t, "woken by hand", d.Find(`form[data-testid="form-page"] textarea[name="note"]`).Text())
	assert.Zero(t, d.Find(`select[name="for"] option[value="wake"]`).Length(), "no longer offered")
	assert.Equal(t, notes, b.AuditCount(t, "action = 'group.note' AND object_id = $1", fp), "the note was not saved alone")
}

// TestRevTriage31SaveKeepsAMultiLineNote: a note of two lines (the one-part
// route takes line breaks, and the groups page shows a note's first line).
// A colleague changes only the owner on the panel and saves. The panel
// drew the note in a text input, which drops line breaks from its value,
// while the hidden note_was kept them: the note read as changed, was
// written as one line, and audited as a note change by the colleague. It
// is drawn in a text box now, and a save that leaves it alone leaves it.
func TestRevTriage31SaveKeepsAMultiLineNote(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	author, _ := b.SignIn(t, "acme:oncall")
	colleague, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "rev31-note-1",
		Error: "index shard rev31 note unavailable"})
	fp, action, _ := panelForm(t, b, author)
	const note = "shard 3\nflaps: do not replay until INC-42"
	resp := b.Do(t, author, "POST", "/groups/note", url.Values{"tenant": {"acme"}, "group": {fp}, "note": {note}, "return_to": {"/groups"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	_, _, values := panelForm(t, b, colleague)
	values.Set("owner", "colleague@example.com")
	values.Set("return_to", "/groups")
	resp = b.Do(t, colleague, "POST", action, values, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	var stored string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT note FROM group_triage WHERE tenant = 'acme' AND fingerprint = $1`, fp).Scan(&stored))
	assert.Equal(t, note, stored, "the note nobody touched is left as it was")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'group.note' AND object_id = '"+fp+"'"), "only the author's note change is audited")
	_, shown, _, _ := triageOf(t, b, colleague, fp)
	assert.Equal(t, note, shown, "the panel shows the note whole")
}
