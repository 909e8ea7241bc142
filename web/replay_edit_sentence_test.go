package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestPayloadEditErrorIsASentence: a payload edit without a reason is
// refused at the payload's field in sentence case, as the other field
// errors are.
func TestPayloadEditErrorIsASentence(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "accounts.permission_grant", "grant-9", map[string][]string{dlq.HeaderPrincipal: {"user:9"}})
	reqPath := requestReplay(t, b, oncall, id)
	resp := b.Do(t, oncall, "POST", fmt.Sprintf("%s/items/%d/payload", reqPath, id), url.Values{"payload": {`{"x":2}`}, "reason": {" "}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	msg := textOf(resp.Doc(t), fmt.Sprintf(`[data-testid="field-error-payload-%d"]`, id))
	require.Contains(t, strings.ToLower(msg), "say why the payload is changed")
	first, _ := utf8.DecodeRuneInString(msg)
	assert.True(t, unicode.IsUpper(first), "the payload's error starts in lower case: %q", msg)
}
