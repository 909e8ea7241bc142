package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevUx9GroupNoteLengthSaysCharactersCountsBytes: the group panel's
// note input allows 2,000 characters (maxlength="2000") and a refusal
// says "At most 2,000 characters.", but the handler and the table count
// bytes: a note of 1,000 characters in Japanese (3,000 bytes) is refused
// with a message that is false for what the person typed, and the input
// let them type it. Either such a note is stored, or the message says
// what the limit really is (bytes, or how far over it is). The owner
// field (320, "At most 320 characters.") is the same.
func TestRevUx9GroupNoteLengthSaysCharactersCountsBytes(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "note-1"})
	note := strings.Repeat("再", 1000)
	require.Equal(t, 1000, utf8.RuneCountInString(note))
	form := url.Values{"tenant": {"acme"}, "group": {strings.Repeat("a", 16)}, "note": {note}, "return_to": {"/groups"}}
	resp := b.Do(t, c, http.MethodPost, "/groups/note", form, nil)
	if resp.Status == http.StatusSeeOther {
		return // stored: the limit is in characters, as the page says
	}
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	assert.NotEqual(t, "At most 2,000 characters.", textOf(resp.Doc(t), `[data-testid="field-error-note"]`),
		"a note of 1,000 characters is not refused as longer than 2,000 characters")
}
