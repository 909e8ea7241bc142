package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// flashes is the text of the flash messages of page.
func flashes(t *testing.T, page testfactory.Response) string {
	t.Helper()
	return page.Doc(t).Find(`[data-testid="flash"]`).Text()
}

// TestRevAuth26SignOutEverywhereSaysHowManySessionsEnded (review 26a):
// after "Sign out everywhere" the admin is told what happened: how many
// sessions ended, or that the person had none left (already signed out,
// or revoked a moment before by another admin).
func TestRevAuth26SignOutEverywhereSaysHowManySessionsEnded(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	admin, _ := b.SignIn(t, "*:admin")
	_, two := b.SignIn(t, "acme:oncall")
	b.SignInAs(t, testfactory.Again(two), "acme:oncall")
	_, one := b.SignIn(t, "acme:viewer")

	revoke := func(issuer, subject string) string {
		t.Helper()
		resp := b.Do(t, admin, "POST", "/admin/sessions/revoke", url.Values{"issuer": {issuer}, "subject": {subject}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		require.Equal(t, "/admin/sessions", resp.Header.Get("Location"))
		page := b.Do(t, admin, "GET", "/admin/sessions", nil, nil)
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		return flashes(t, page)
	}
	assert.Contains(t, revoke(two.Issuer, two.Subject), "Ended 2 sessions.")
	assert.Contains(t, revoke(one.Issuer, one.Subject), "Ended 1 session.")
	assert.Contains(t, revoke(two.Issuer, two.Subject), "That person had no session left to end.")
}

// TestRevAuth26SessionsPageLeavesOutSignInsPastTheirLifetime (review 26a):
// the admins' Sessions page lists who is signed in: a sign-in past its
// lifetime signs nobody in, and is not listed (nor counted) as if it did.
func TestRevAuth26SessionsPageLeavesOutSignInsPastTheirLifetime(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	admin, _ := b.SignIn(t, "*:admin")
	gone, u := b.SignIn(t, "acme:viewer")
	_, live := b.SignIn(t, "acme:viewer")
	_, err := b.Pool.Exec(context.Background(), `UPDATE user_sessions SET expires_at = now() - interval '1 second'
        WHERE issuer = $1 AND subject = $2`, u.Issuer, u.Subject)
	require.NoError(t, err)
	assert.Equal(t, http.StatusFound, b.Do(t, gone, "GET", "/deadletters", nil, nil).Status, "past its lifetime: signed out")

	page := b.Do(t, admin, "GET", "/admin/sessions", nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	doc := page.Doc(t)
	assert.Equal(t, 1, doc.Find(`[data-testid="session-row"][data-subject="`+live.Subject+`"]`).Length(), "a live sign-in is listed")
	assert.Zero(t, doc.Find(`[data-testid="session-row"][data-subject="`+u.Subject+`"]`).Length(), "a sign-in past its lifetime is not")
}

// TestRevAuth26UnchangedSessionIsNotWrittenAgain (review 26a): a page
// that changes nothing of the browser's session (and whose idle deadline
// need not move yet) leaves its row as it was: no write, no dead tuple,
// per page view. A page that leaves a message writes it.
func TestRevAuth26UnchangedSessionIsNotWrittenAgain(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	admin, _ := b.SignIn(t, "*:admin")
	ctx := context.Background()
	token := b.SessionCookie(t, admin).Value
	version := func() string {
		t.Helper()
		var v string
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT xmin::text FROM sessions WHERE token = $1`, token).Scan(&v))
		return v
	}
	require.Equal(t, http.StatusOK, b.Do(t, admin, "GET", "/admin/bindings", nil, nil).Status)
	before := version()
	for range 3 {
		require.Equal(t, http.StatusOK, b.Do(t, admin, "GET", "/admin/bindings", nil, nil).Status)
	}
	assert.Equal(t, before, version(), "pages that changed nothing wrote the session")

	resp := b.Do(t, admin, "POST", "/admin/bindings", url.Values{"email": {"w26@example.com"}, "role": {"viewer"}, "tenant": {"acme"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	assert.NotEqual(t, before, version(), "a message for the next page is written")
}

// TestRevAuth26PersonsRequestMovesTheIdleDeadline (review 26a): a person
// who keeps working is not signed out at the idle timeout: once the
// stored idle deadline lags, their next request moves it a whole idle
// timeout on.
func TestRevAuth26PersonsRequestMovesTheIdleDeadline(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	admin, _ := b.SignIn(t, "*:admin")
	ctx := context.Background()
	token := b.SessionCookie(t, admin).Value
	require.Equal(t, http.StatusOK, b.Do(t, admin, "GET", "/admin/bindings", nil, nil).Status)
	// The person has worked for 55 minutes without the deadline moving.
	_, err := b.Pool.Exec(ctx, `UPDATE sessions SET expiry = now() + interval '5 minutes' WHERE token = $1`, token)
	require.NoError(t, err)
	// A page that changes nothing else of the session.
	require.Equal(t, http.StatusOK, b.Do(t, admin, "GET", "/admin/bindings", nil, nil).Status)
	var left float64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT extract(epoch FROM expiry - now()) FROM sessions WHERE token = $1`, token).Scan(&left))
	assert.Greater(t, left, float64(55*60), "the idle deadline moved a whole idle timeout (1h) on")
}

// TestRevAuth26AuditEntryOutsideAnyTenantIsNotFoundForOneTenantsAuditor
// (review 26a): an audit entry outside any tenant (a sign-in, a grant over
// every tenant) is for auditors of every tenant; an auditor of one tenant
// who opens it by its number is answered 404, as for a missing entry, and
// the attempt is audited.
func TestRevAuth26AuditEntryOutsideAnyTenantIsNotFoundForOneTenantsAuditor(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	global, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Action: "test.global26a", Outcome: audit.OutcomeOK, Reason: "outside any tenant"})
	require.NoError(t, err)
	path := fmt.Sprintf("/audit/%d", global.Seq)

	everywhere, _ := b.SignIn(t, "*:auditor")
	require.Equal(t, http.StatusOK, b.Do(t, everywhere, "GET", path, nil, nil).Status, "an auditor of every tenant reads it")

	acme, u := b.SignIn(t, "acme:auditor")
	resp := b.Do(t, acme, "GET", path, nil, nil)
	assert.Equal(t, http.StatusNotFound, resp.Status, "not found for an auditor of one tenant")
	assert.NotContains(t, resp.Body, "test.global26a")
	assert.Equal(t, b.Do(t, acme, "GET", "/audit/999999999", nil, nil).Status, resp.Status, "the same answer as a missing entry")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'authz.denied' AND object_type = 'audit_entry' AND object_id = $1 AND actor_subject = $2",
		fmt.Sprint(global.Seq), u.Subject), "the attempt is audited")
}
