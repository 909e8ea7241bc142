package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestConfirmWrongPhraseIsAtItsField: a manual replay's phrase typed wrong
// is refused (422) beside its own field, which points at the message
// (aria-describedby), and not in the group's banner.
func TestConfirmWrongPhraseIsAtItsField(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "orders.refund", "refund-1", nil)
	confirm := draftPage(t, b, oncall, id)
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	name, ok := d.Find(`input[name^="confirm-"]`).Attr("name")
	require.True(t, ok, "a manual replay asks for a typed confirmation")

	resp := b.Do(t, oncall, "POST", confirm, url.Values{name: {"REPLAY refund-2"}, "reason": {"payments gateway back"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	back := resp.Doc(t)
	msg := textOf(back, `[data-testid="field-error-`+name+`"]`)
	assert.Contains(t, msg, "REPLAY refund-1", "the wrong phrase has no message at its field")
	errID := back.Find(`[data-testid="field-error-`+name+`"]`).AttrOr("id", "")
	require.NotEmpty(t, errID)
	assert.Contains(t, strings.Fields(back.Find(`input[name="`+name+`"]`).AttrOr("aria-describedby", "")), errID,
		"the phrase's field does not point at its message")
	assert.Zero(t, back.Find(`[data-testid="replay-group-error"]`).Length(),
		"the wrong phrase is reported at group level: %q", textOf(back, `[data-testid="replay-group-error"]`))
}
