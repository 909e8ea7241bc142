package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevUx9RefusalFlashIsASentence: a refused action on a request's page
// (requestFormError) shows the refusal twice: beside the field, made a
// sentence (sentence()), and in the error flash at the top, as the rules'
// raw clause in lower case: "say why the payload is changed: the approver
// reads it beside the change" — for an Undo edit too, where nothing is
// being changed — or "say why the replay is stopped: …". The top of the
// page reads as a sentence, like the field.
func TestRevUx9RefusalFlashIsASentence(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "accounts.permission_grant", "grant-flash", map[string][]string{dlq.HeaderPrincipal: {"user:9"}})
	reqPath := requestReplay(t, b, oncall, id)
	edit := fmt.Sprintf("%s/items/%d/payload", reqPath, id)
	require.Equal(t, http.StatusSeeOther, b.Do(t, oncall, "POST", edit, url.Values{"payload": {`{"x":2}`}, "reason": {"typo"}}, nil).Status)

	resp := b.Do(t, oncall, "POST", edit, url.Values{"payload": {`{"x":2}`}, "reason": {" "}, "undo": {"1"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	d := resp.Doc(t)
	field := textOf(d, fmt.Sprintf(`[data-testid="field-error-payload-%d"]`, id))
	require.NotEmpty(t, field)
	flash := textOf(d, `[data-testid="flash"][data-kind="error"]`)
	require.NotEmpty(t, flash)
	first, _ := utf8.DecodeRuneInString(flash)
	assert.True(t, unicode.IsUpper(first), "the error flash starts in lower case: %q (the field says %q)", flash, field)
}
