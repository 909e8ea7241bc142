package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevAudit12AttemptOfSomeoneWithNoRoleIsAudited: every denied attempt
// writes an audit row (DESIGN.md; docs/access.md "The route table"). A
// person who signs in but holds no role at all (anyone in the identity
// provider outside the console's groups, or an approver whose binding an
// admin just removed: roles are computed on every request, the session
// lives on) is answered with the "no access" page by enforce
// (web/middleware.go: len(Access.Roles(u)) == 0 → render 403) before the
// permission check that audits, so their POSTs to approve a replay or to
// bind themselves admin leave no row at all. The people an auditor most
// needs to see trying are the ones whose access was taken away.
func TestRevAudit12AttemptOfSomeoneWithNoRoleIsAudited(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, who := b.SignIn(t, "engineering") // signed in, no role of the console's

	approve := b.Do(t, client, http.MethodPost, "/replay/requests/1/approve", url.Values{}, nil)
	require.Equal(t, http.StatusForbidden, approve.Status)
	bind := b.Do(t, client, http.MethodPost, "/admin/bindings",
		url.Values{"subject": {who.Email}, "role": {"admin"}, "tenant": {"*"}}, nil)
	require.Equal(t, http.StatusForbidden, bind.Status)

	assert.Equal(t, 2, b.AuditCount(t, `outcome = 'denied' AND actor_subject = $1`, who.Subject),
		"two refused posts (approve a replay, bind themselves admin) of a signed-in person without a role: each must be in the audit log")
}
