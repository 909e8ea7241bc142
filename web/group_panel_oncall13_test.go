package web_test

import (
	"net/http"
	"net/url"
	"testing"

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
