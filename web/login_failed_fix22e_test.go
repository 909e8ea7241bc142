package web_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFix22SignInFailureReasonShowsHiddenCharacters: the identity
// provider's error_description is part of the sign-in failure's reason
// (authz Login.Callback), and the provider, or whoever sends a browser
// holding a sign-in's state to the callback, chooses it. The failure page
// writes it as every other text from outside is written (UntrustedLines):
// a direction override or a zero-width space is a visible marker, the
// reason isolated, and no text on the page holds the character itself.
func TestFix22SignInFailureReasonShowsHiddenCharacters(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := testfactory.NoFollow(jar)
	start := b.Do(t, browser, "GET", "/auth/login", nil, nil)
	require.Equal(t, http.StatusFound, start.Status)
	to, err := url.Parse(start.Header.Get("Location"))
	require.NoError(t, err)
	state := to.Query().Get("state")
	require.NotEmpty(t, state, "the sign-in's state, as the provider sends it back")

	q := url.Values{"state": {state}, "error": {"access_denied"},
		"error_description": {"denied for \u202etnuocca\u200b ruoy"}}
	resp := b.Do(t, browser, "GET", "/auth/callback?"+q.Encode(), nil, nil)
	require.Equal(t, http.StatusBadRequest, resp.Status, resp.Body)
	d := resp.Doc(t)
	reason := byID(d, "login-failed-reason")
	require.Equal(t, 1, reason.Length())
	assert.Contains(t, reason.Text(), "denied for <U+202E>tnuocca<U+200B> ruoy")
	assert.Equal(t, 2, reason.Find("bdi.uc").Length(), "each hidden character a marker")
	assert.Contains(t, reason.Find("bdi.uc").First().AttrOr("title", ""), "U+202E RIGHT-TO-LEFT OVERRIDE")
	assertIsolated(t, reason)
	assertNoHiddenText(t, d)
}
