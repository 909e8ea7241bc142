package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb10IdlePollSignsTheTabInAgain: rev-authn found that the
// dashboard's own refresh (every 30 s) kept an unattended tab signed in
// past SESSION_IDLE_TIMEOUT; since then a poll (Quarantine-Poll) does not
// move the idle deadline, and the first poll after it is answered 401 with
// HX-Redirect: /auth/login?return_to=/ (signInPage). htmx follows it at
// once: the unattended browser itself goes to the sign-in, the identity
// provider, whose single sign-on session outlives the console's idle
// timeout (hours, days) and asks nothing (the console sends no prompt or
// max_age), sends it straight back, and the tab is signed in again with a
// new session, which polls on. Nobody is at the machine: the idle timeout
// ends nothing for an open dashboard (nor for an open replay request page,
// whose progress polls alike), and each new session restarts the absolute
// lifetime too. The audit log gains an auth.login under the person each
// time, none of them theirs.
//
// Here the identity provider (Dex, which keeps no single sign-on session)
// is answered as such a provider would answer: the person signed in
// without anyone typing.
//
// Severity: medium (the idle timeout, a control the docs promise for
// unattended tabs, is void with any single sign-on provider). Expected: a
// poll that finds the session ended does not send the browser to the
// sign-in (no HX-Redirect for a Quarantine-Poll request: app.js then says
// "Your session has ended. Reload the page to sign in again."); a person's
// own request still may. (TestDashboardRefreshDoesNotKeepAnIdleSessionAlive's
// last assertion encodes the redirect and changes with the fix.)
func TestRevWeb10IdlePollSignsTheTabInAgain(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	person := testidp.Person{ID: "rw10-idle", Email: "rw10-idle@example.com", EmailVerified: true}
	viewer, _ := b.SignInAs(t, person, "acme:viewer")
	ctx := context.Background()

	page := b.Do(t, viewer, http.MethodGet, "/", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	var pollHeaders map[string]string
	require.NoError(t, json.Unmarshal([]byte(byID(page.Doc(t), "dashboard").AttrOr("hx-headers", "{}")), &pollHeaders))
	poll := map[string]string{"HX-Request": "true", "HX-Trigger": "dashboard", "HX-Target": "dashboard", "HX-Current-URL": b.URL() + "/"}
	for k, v := range pollHeaders {
		poll[k] = v
	}
	require.NotEmpty(t, pollHeaders, "precondition: the dashboard's refresh marks itself a poll")

	// The person left; the idle deadline passed.
	token := b.SessionCookie(t, viewer).Value
	_, err := b.Pool.Exec(ctx, `UPDATE sessions SET expiry = now() - interval '1 second' WHERE token = $1`, token)
	require.NoError(t, err)
	logins := b.AuditCount(t, "action = 'auth.login' AND actor_subject = $1", b.IdP.Subject(person.ID))

	resp := b.Do(t, viewer, http.MethodGet, "/", nil, poll)
	require.Equal(t, http.StatusUnauthorized, resp.Status, "the session ended")
	redirect := resp.Header.Get("HX-Redirect")
	if redirect != "" {
		// What htmx does with HX-Redirect: the browser goes there, and on
		// through the provider, whose single sign-on still knows the person.
		r, err := viewer.Get(b.URL() + redirect)
		require.NoError(t, err)
		r.Body.Close()
		if loc := r.Header.Get("Location"); strings.HasPrefix(loc, b.IdP.Issuer) {
			r, err = viewer.Get(b.IdP.SignIn(t, viewer, loc, person).String())
			require.NoError(t, err)
			r.Body.Close()
		}
		again := b.Do(t, viewer, http.MethodGet, "/", nil, poll)
		t.Logf("after following HX-Redirect %q: the next poll answers %d; auth.login rows under the person %d → %d", redirect, again.Status,
			logins, b.AuditCount(t, "action = 'auth.login' AND actor_subject = $1", b.IdP.Subject(person.ID)))
	}
	assert.Empty(t, redirect,
		"a poll after the idle timeout sends the unattended browser to the sign-in, which the provider's single sign-on completes: the tab is signed in again with nobody there")
}
