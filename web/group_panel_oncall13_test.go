package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall13PanelNoteSaveKeepsOthersTicket: the group panel's one
// form promises that "a field left alone does not undo a change someone
// else made meanwhile" (readTriageForm's *_was fields), and that holds for
// the owner (TestFixLeft12PanelKeepsOthersChanges). It does not hold for
// the note and the ticket: they are one part (NoteChanged = note or
// ticket changed), so a Save that changes only the note writes the
// ticket as the form drew it. At 3 am a colleague links the incident
// ticket; the on-call, whose panel was drawn a minute before, types a note
// and presses Save: the ticket link is gone (and the other way round, a
// ticket typed puts back an old note over the colleague's "do not replay:
// INC-42").
//
// Expected: the note and the ticket are each written only when changed
// (or a save whose *_was no longer matches the row is refused as a
// conflict, with what changed shown).
func TestRevOncall13PanelNoteSaveKeepsOthersTicket(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	other, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "rvo13-ticket", nil)
	fp, action, mine := panelForm(t, b, oncall)

	// The colleague links the ticket through their own panel (only the ticket changed).
	_, otherAction, theirs := panelForm(t, b, other)
	theirs.Set("ticket", "https://tickets.example/INC-42")
	resp := b.Do(t, other, "POST", otherAction, theirs, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	_, _, ticket, _ := triageOf(t, b, oncall, fp)
	require.Equal(t, "https://tickets.example/INC-42", ticket)

	// The on-call's panel, drawn before, gets a note only.
	mine.Set("note", "shard 3 back at 03:10, replaying")
	resp = b.Do(t, oncall, "POST", action, mine, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	_, note, ticket, _ := triageOf(t, b, oncall, fp)
	assert.Equal(t, "shard 3 back at 03:10, replaying", note)
	assert.Equal(t, "https://tickets.example/INC-42", ticket, "the ticket left alone in the form is not undone")

	t.Run("TicketSaveKeepsOthersNote", func(t *testing.T) {
		_, action, mine := panelForm(t, b, oncall)
		resp := b.Do(t, other, "POST", "/groups/note", url.Values{"tenant": {"acme"}, "group": {fp},
			"note": {"do not replay: INC-42 double charges"}, "ticket": {"https://tickets.example/INC-42"}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		mine.Set("ticket", "https://tickets.example/INC-43")
		resp = b.Do(t, oncall, "POST", action, mine, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		_, note, _, _ := triageOf(t, b, oncall, fp)
		assert.Equal(t, "do not replay: INC-42 double charges", note, "the note left alone in the form is not undone")
	})
}

// TestRevOncall13PanelCountWithLeaveAsItIsKeepsTheTime: the group is
// snoozed for 4 hours. On the panel the on-call leaves "Snooze: leave as
// it is" and types 50 in "or until this many more arrive", meaning "wake
// me at the time already set, or sooner if 50 more come". The save reads
// "leave as it is" as "no time limit": the time limit is dropped and the
// group is snoozed until 50 more arrive, with no end in time. A producer
// that stops failing never sends 50 more: the group's unresolved dead
// letters stay out of the groups page and the dashboard for good, and the
// flash said only "Saved in acme: snooze.".
//
// Expected: "leave as it is" with a count keeps the snooze's time (time or
// count, whichever first), or the form refuses the mix and asks to choose
// a time or "with no time limit".
func TestRevOncall13PanelCountWithLeaveAsItIsKeepsTheTime(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "rvo13-leave", nil)
	fp, _, _ := panelForm(t, b, oncall)
	resp := b.Do(t, oncall, "POST", "/groups/snooze", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {"4h"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	_, action, form := panelForm(t, b, oncall)
	require.Equal(t, "", form.Get("for"), "leave as it is")
	form.Set("grows", "50")
	resp = b.Do(t, oncall, "POST", action, form, nil)
	if resp.Status == http.StatusUnprocessableEntity {
		return // refused as ambiguous: fine
	}
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	var until *time.Time
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT snoozed_until FROM group_triage WHERE tenant = 'acme' AND fingerprint = $1`, fp).Scan(&until))
	assert.NotNil(t, until, "the snooze's 4 hours were left 'as they are' and are gone: snoozed with no time limit until 50 more arrive")
}
