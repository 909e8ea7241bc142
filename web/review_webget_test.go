package web_test

// Review (rev-govern): failing tests for paths that reach an effect
// without passing the rule (262ff0b, 7cee689 with 714ee33's gofmt, moved
// here from review_govern_test.go, which this branch does not have).

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestPolicyPageShowsOnlyTheCallersTenants: the role bindings page hides
// another tenant's bindings and group mappings ("its name, its groups are
// not this admin's to see", b5cbe8a), and the dashboard shows only the
// retention lines of the caller's tenants (retentionView with tenants).
// The policy page, open to every on-call, approver, auditor and admin of
// any tenant, lists every tenant's retention lines: an acme on-call reads
// that globex exists and which of its item types are kept how long.
func TestPolicyPageShowsOnlyTheCallersTenants(t *testing.T) {
	t.Parallel()
	b, _ := startWithPolicy(t, shippedPolicyAnd(t, `
[[retention.rule]]
tenant = "globex-secret-tenant"
item_type = "payroll.>"
closed = "365d"
`))
	acme, _ := b.SignIn(t, "acme:oncall")
	page := b.Do(t, acme, "GET", "/policy", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.False(t, strings.Contains(page.Body, "globex-secret-tenant"), "another tenant's retention line on acme's policy page")
	assert.False(t, strings.Contains(page.Body, "payroll"), "another tenant's item types on acme's policy page")
}

// TestCrossSiteNavigationChangesNothing: cross-site protection covers the
// unsafe methods, so every state change is meant to be a POST. The audit
// exports are GETs that write: an audit row "audit.export" under the
// signed-in auditor (with a filter the link chose) and a signed checkpoint
// of the head. The session cookie is SameSite=Lax, which a top-level
// cross-site navigation carries: any page an auditor opens can make the log
// say that they exported it, as often as it likes (and start a full export
// query each time).
func TestCrossSiteNavigationChangesNothing(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	auditor, me := b.SignIn(t, "*:auditor")
	exports := func() int { return b.AuditCount(t, "action = 'audit.export' AND actor_subject = $1", me.Subject) }
	checkpoints := func() int {
		var n int
		require.NoError(t, b.Pool.QueryRow(t.Context(), "SELECT count(*) FROM audit_checkpoints WHERE reason = 'export'").Scan(&n))
		return n
	}
	before, cpBefore := exports(), checkpoints()
	// What a browser sends when another site navigates it here.
	resp := b.Do(t, auditor, "GET", "/audit/export.csv?actor=planted-by-evil.example", nil,
		map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Referer": "https://evil.example/"})
	assert.NotEqual(t, http.StatusOK, resp.Status, "a cross-site navigation runs an export")
	assert.Equal(t, before, exports(), "a cross-site navigation writes an audit row under the auditor")
	assert.Equal(t, cpBefore, checkpoints(), "a cross-site navigation records a checkpoint")
}
