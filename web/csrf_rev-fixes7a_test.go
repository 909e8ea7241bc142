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

// TestRevFixes7aSignedOutSessionStillActsAsThePerson
//
// Defect (low): the session memory of cross-site refusals
// (authz.CrossSiteDenials.Remember/Refused, crossOriginRefused) answers
// for a browser session for a minute without reading it, so a session
// that was signed out (or ended by an administrator: a stolen one) in that
// minute still acts as the person it signed in: a cross-site post sent
// with its cookie is counted against that person (their next csrf.denied
// row says so many more "started by another site" were not written),
// instead of as an unsigned client's, which on-call sees in
// quarantine_anonymous_denials_total{kind="cross_origin"} and the
// "refused an anonymous request" log line. The person is blamed for posts
// no session of theirs made, and probing with a dead cookie is hidden.
//
// Expected: a refusal from memory only for a session still live: the
// memory forgets a session when it ends here (sign-out drops its key), or
// Refused is only a hint that is confirmed against the session's end;
// a post with the cookie of a session that signs nobody in is an
// anonymous client's (counted, logged), as it was before the memory.
func TestRevFixes7aSignedOutSessionStillActsAsThePerson(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, who := b.SignIn(t, "acme:oncall")
	post := func(c *http.Client, hdr map[string]string) {
		t.Helper()
		resp := b.Do(t, c, http.MethodPost, "/audit/verify", url.Values{}, hdr)
		require.Equal(t, http.StatusForbidden, resp.Status)
		require.Contains(t, resp.Body, "Cross-site request refused.")
	}
	// Over the person's limit of refusals another site started: their
	// browser session is remembered.
	for b.AuditCount(t, `action = 'csrf.denied' AND actor_subject = $1`, who.Subject) < 10 {
		post(client, crossSite)
	}
	post(client, crossSite)

	// The person signs out; the browser's cookie (as an attacker holding
	// it has it) no longer signs anyone in.
	base, err := url.Parse(b.URL())
	require.NoError(t, err)
	var cookies []string
	for _, c := range client.Jar.Cookies(base) {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	require.NotEmpty(t, cookies)
	resp := b.Do(t, client, http.MethodPost, "/auth/logout", url.Values{}, nil)
	require.Less(t, resp.Status, 400, resp.Body)
	dead := testfactory.NoFollow(nil)
	page := b.Do(t, dead, http.MethodGet, "/deadletters", nil, map[string]string{"Cookie": strings.Join(cookies, "; ")})
	require.NotEqual(t, http.StatusOK, page.Status, "the old cookie signs nobody in")

	series := `quarantine_anonymous_denials_total{kind="cross_origin"}`
	// A cross-site post from a browser that signs nobody in is counted
	// there.
	post(dead, crossSite)
	before := metric(t, b, series)
	require.Positive(t, before, "an anonymous cross-site post is counted")
	hdr := map[string]string{"Cookie": strings.Join(cookies, "; ")}
	for k, v := range crossSite {
		hdr[k] = v
	}
	post(dead, hdr)
	assert.Equal(t, before+1, metric(t, b, series),
		"a cross-site post with a signed-out session's cookie is an anonymous client's, not the person's")
}
