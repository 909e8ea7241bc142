package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestUnverifiedEmailNeverIdentity: someone whose provider did not verify
// their email claims a real approver's address. Everywhere people read it,
// the address is marked unverified; it never matches as identity: not for
// an email binding, not for the auditor's actor filter.
func TestUnverifiedEmailNeverIdentity(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	const claimed = "approver@example.com"
	admin, _ := b.SignIn(t, "*:admin")
	resp := b.Do(t, admin, "POST", "/admin/bindings", url.Values{"email": {claimed}, "role": {"approver"}, "tenant": {"acme"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.NoError(t, b.Access.Reload()) // what the LISTEN of a running console does

	real, realUser := b.SignInAs(t, testidp.Person{ID: "real-approver", Email: claimed, EmailVerified: true})
	mallory, mal := b.SignInAs(t, testidp.Person{ID: "mallory", Email: claimed, EmailVerified: false}, "acme:oncall")

	// The email binding gives the real approver the role, not Mallory.
	assert.True(t, b.Access.Can(realUser, "acme", "replay:manual", "approve"))
	assert.False(t, b.Access.Can(mal, "acme", "replay:manual", "approve"))
	assert.Equal(t, http.StatusForbidden, b.Do(t, mallory, "GET", "/approvals", nil, nil).Status)

	// Mallory's own header says unverified.
	home := b.Do(t, mallory, "GET", "/deadletters", nil, nil).Doc(t)
	assert.Contains(t, home.Find(`[data-testid="user-name"]`).Text(), claimed+" (unverified)")

	// Mallory requests a replay that needs an approver: the approver sees
	// who asked, marked.
	id := seed(t, b, "acme", "email.send", "mail-9", map[string][]string{dlq.HeaderOperationID: {"send-9"}})
	reqPath := requestReplay(t, b, mallory, id)
	page := b.Do(t, real, "GET", reqPath, nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Contains(t, page.Doc(t).Find(`[data-testid="replay-intent"]`).Text(), claimed+" (unverified)")
	queue := b.Do(t, real, "GET", "/approvals", nil, nil).Doc(t)
	assert.Contains(t, queue.Find(`[data-testid="approval-row"]`).Text(), claimed+" (unverified)")

	// The auditor's actor filter by the address finds the real approver's
	// entries only; by Mallory's subject, Mallory's, shown as unverified.
	auditor, _ := b.SignIn(t, "*:auditor")
	rows := func(actor string) *goquery.Selection {
		return b.Do(t, auditor, "GET", "/audit?"+url.Values{"actor": {actor}}.Encode(), nil, nil).Doc(t).Find(`[data-testid="audit-row"]`)
	}
	byEmail := rows(claimed)
	require.Positive(t, byEmail.Length(), "the real approver signed in")
	byEmail.Each(func(_ int, r *goquery.Selection) {
		assert.Equal(t, claimed, strings.TrimSpace(r.Find(`td[data-label="Actor"]`).Text()))
	})
	var malloryRows int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE actor_subject = $1`, mal.Subject).Scan(&malloryRows))
	require.Positive(t, malloryRows)
	bySubject := rows(mal.Subject)
	assert.Equal(t, malloryRows, bySubject.Length())
	bySubject.Each(func(_ int, r *goquery.Selection) {
		assert.Equal(t, claimed+" (unverified)", strings.TrimSpace(r.Find(`td[data-label="Actor"]`).Text()))
	})
	var verified bool
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT bool_or(actor_email_verified) FROM audit_log WHERE actor_subject = $1`, mal.Subject).Scan(&verified))
	assert.False(t, verified, "recorded as unverified, inside the hash")
}
