package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall22PanelNoteSaveOverwritesANoteWrittenMeanwhile: the group
// panel's form carries what it drew (note_was, owner_was, ticket_was), and
// readTriageForm uses it only to tell which fields the person changed
// (TestFixLeft12PanelKeepsOthersChanges, TestRevOncall13PanelNoteSaveKeepsOthersTicket).
// A field the person did change is written over whatever the row holds
// now, even when that is no longer what the form drew: at 03:05 a
// colleague writes "do not replay: INC-42 double charges" as the group's
// note; the on-call, whose panel was drawn at 03:00 with "shard 3 flaps",
// adds "; replaying at 03:10" to the note as drawn and presses Save. The
// save says "Saved in acme: note." and the colleague's warning is gone
// from the group (only the audit log still has it), although note_was
// showed that the on-call never saw it.
//
// Severity: low (a warning on the group silently lost; the audit log
// keeps it). Expected: a changed field whose *_was no longer matches the
// row is not written blind: the save is refused as a conflict and the
// form comes back showing the note as it is now (or the colleague's note
// is kept).
func TestRevOncall22PanelNoteSaveOverwritesANoteWrittenMeanwhile(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	other, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "rvo22-note", nil)
	fp, action, first := panelForm(t, b, oncall)
	first.Set("note", "shard 3 flaps")
	resp := b.Do(t, oncall, "POST", action, first, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	// 03:00: the on-call's panel is drawn with the note.
	_, action, mine := panelForm(t, b, oncall)
	require.Equal(t, "shard 3 flaps", mine.Get("note_was"))

	// 03:05: a colleague writes a warning as the note, through their own panel.
	_, otherAction, theirs := panelForm(t, b, other)
	theirs.Set("note", "do not replay: INC-42 double charges")
	resp = b.Do(t, other, "POST", otherAction, theirs, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	_, note, _, _ := triageOf(t, b, oncall, fp)
	require.Equal(t, "do not replay: INC-42 double charges", note)

	// 03:10: the on-call adds to the note as their panel drew it.
	mine.Set("note", mine.Get("note_was")+"; replaying at 03:10")
	resp = b.Do(t, oncall, "POST", action, mine, nil)
	_, note, _, _ = triageOf(t, b, oncall, fp)
	t.Logf("save: %d %s; note now %q", resp.Status, resp.Header.Get("Location"), note)
	assert.True(t, resp.Status != http.StatusSeeOther || strings.Contains(note, "INC-42"),
		"a save drawn before the colleague's note (note_was %q) was taken (%d) and wrote %q over %q",
		mine.Get("note_was"), resp.Status, note, "do not replay: INC-42 double charges")
}
