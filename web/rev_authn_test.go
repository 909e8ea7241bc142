package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevokedPersonNotListedAsRoleHolder (review rev-authn): an admin ends
// every session of an approver (Sign out everywhere: their directory entry
// is revoked, groups cleared; the worker gives them no right) and opens
// "who holds which role" to check. authz.Holders reads the newest
// user_sessions row whatever its state (ended, revoked), so the person is
// still listed as holding approver in acme through the group, as if
// nothing had happened; the page says nothing of the revocation.
func TestRevokedPersonNotListedAsRoleHolder(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	admin, _ := b.SignIn(t, "*:admin")
	_, approver := b.SignIn(t, "acme:approver")

	resp := b.Do(t, admin, "POST", "/admin/sessions/revoke", url.Values{"issuer": {approver.Issuer}, "subject": {approver.Subject}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	page := b.Do(t, admin, "GET", "/admin/bindings", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	var listed []string
	byID(page.Doc(t), "holder-row").Each(func(_ int, s *goquery.Selection) {
		if s.AttrOr("data-person", "") == approver.Email {
			listed = append(listed, s.AttrOr("data-tenant", "")+":"+s.AttrOr("data-role", ""))
		}
	})
	assert.Empty(t, listed, "a person whose sessions an admin ended (directory revoked) is still shown holding roles through their group")
}

// TestDashboardRefreshDoesNotKeepAnIdleSessionAlive (review rev-authn): the
// dashboard, where every reader of dead letters lands, asks for itself
// every 30 seconds (hx-trigger="every 30s"), and each of those requests
// moves the session's idle deadline like a person's click. A dashboard left
// open on an unattended machine stays signed in until the absolute
// lifetime (12 h): SESSION_IDLE_TIMEOUT (1 h) never ends it.
func TestDashboardRefreshDoesNotKeepAnIdleSessionAlive(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	viewer, _ := b.SignIn(t, "acme:viewer")
	ctx := context.Background()
	token := b.SessionCookie(t, viewer).Value
	// What the dashboard's poll sends besides htmx's own headers, as the
	// page tells htmx (hx-headers).
	page := b.Do(t, viewer, "GET", "/", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	var pollHeaders map[string]string
	require.NoError(t, json.Unmarshal([]byte(byID(page.Doc(t), "dashboard").AttrOr("hx-headers", "{}")), &pollHeaders))
	poll := map[string]string{"HX-Request": "true", "HX-Trigger": "dashboard", "HX-Target": "dashboard", "HX-Current-URL": b.URL() + "/"}
	for k, v := range pollHeaders {
		poll[k] = v
	}
	// Nobody has touched the console for 59 minutes: a minute of idle left.
	_, err := b.Pool.Exec(ctx, `UPDATE sessions SET expiry = now() + interval '1 minute' WHERE token = $1`, token)
	require.NoError(t, err)
	var before time.Time
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT expiry FROM sessions WHERE token = $1`, token).Scan(&before))

	// The open dashboard refreshes itself, with the headers htmx sends for
	// the poll of the element #dashboard (hx-trigger="every 30s").
	resp := b.Do(t, viewer, "GET", "/", nil, poll)
	require.Equal(t, http.StatusOK, resp.Status)

	var after time.Time
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT expiry FROM sessions WHERE token = $1`, token).Scan(&after))
	assert.WithinDuration(t, before, after, 2*time.Minute,
		"the dashboard's automatic refresh moved the idle deadline from %s to %s: an unattended open tab is never idle", before, after)

	// Once the idle deadline passed, the poll is answered 401 and does not
	// send the browser to the sign-in (no HX-Redirect: the provider's single
	// sign-on would sign the unattended tab in again); app.js says that the
	// session ended.
	_, err = b.Pool.Exec(ctx, `UPDATE sessions SET expiry = now() - interval '1 second' WHERE token = $1`, token)
	require.NoError(t, err)
	resp = b.Do(t, viewer, "GET", "/", nil, poll)
	assert.Equal(t, http.StatusUnauthorized, resp.Status)
	assert.Empty(t, resp.Header.Get("HX-Redirect"))
}
