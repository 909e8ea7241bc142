package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestAdminRevokesSessions: an admin of every tenant ends all sessions of a
// person, who is signed out at their next request on every device; it is
// audited. An admin of one tenant may not.
func TestAdminRevokesSessions(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	admin, adminUser := b.SignIn(t, "*:admin")
	laptop, victim := b.SignIn(t, "acme:oncall")
	phone, _ := b.SignInAs(t, testfactory.Again(victim), "acme:oncall")
	for _, c := range []*http.Client{laptop, phone} {
		require.Equal(t, http.StatusOK, b.Do(t, c, "GET", "/deadletters", nil, nil).Status)
	}

	page := b.Do(t, admin, "GET", "/admin/sessions", nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	row := page.Doc(t).Find(`[data-testid="session-row"][data-subject="` + victim.Subject + `"]`)
	require.Equal(t, 1, row.Length(), page.Body)
	assert.Contains(t, row.Text(), "2", "two sessions")

	// An admin of one tenant cannot end sessions that reach every tenant.
	acmeAdmin, _ := b.SignIn(t, "acme:admin")
	form := url.Values{"issuer": {victim.Issuer}, "subject": {victim.Subject}}
	assert.Equal(t, http.StatusForbidden, b.Do(t, acmeAdmin, "POST", "/admin/sessions/revoke", form, nil).Status)
	assert.Equal(t, http.StatusOK, b.Do(t, laptop, "GET", "/deadletters", nil, nil).Status, "still signed in")
	// Nor can the person themselves, or anyone without the role.
	assert.Equal(t, http.StatusForbidden, b.Do(t, laptop, "POST", "/admin/sessions/revoke", form, nil).Status)

	resp := b.Do(t, admin, "POST", "/admin/sessions/revoke", form, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	for _, c := range []*http.Client{laptop, phone} {
		resp := b.Do(t, c, "GET", "/deadletters", nil, nil)
		assert.Equal(t, http.StatusFound, resp.Status, "signed out")
		assert.Contains(t, resp.Header.Get("Location"), "/auth/login")
	}
	assert.Equal(t, 1, b.AuditCount(t, `action = 'auth.sessions_revoke' AND actor_subject = $1 AND object_id = $2
        AND after = '{"sessions_ended": 2}'`, adminUser.Subject, victim.Issuer+"|"+victim.Subject))
	assert.Equal(t, http.StatusOK, b.Do(t, admin, "GET", "/admin/bindings", nil, nil).Status, "the admin is still signed in")
	after := b.Do(t, admin, "GET", "/admin/sessions", nil, nil).Doc(t)
	assert.Zero(t, after.Find(`[data-testid="session-row"][data-subject="`+victim.Subject+`"]`).Length())

	// Signing in again works, with groups read afresh.
	again, _ := b.SignInAs(t, testfactory.Again(victim), "acme:viewer")
	assert.Equal(t, http.StatusOK, b.Do(t, again, "GET", "/deadletters", nil, nil).Status)
}
