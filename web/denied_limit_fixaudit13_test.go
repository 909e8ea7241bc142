package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixAudit13CrossSiteLimitLeavesATrace: the per-person limit is one
// allowance for refusals of people without a role and for refusals
// another site started (csrf.denied, written by crossOriginDenied, not by
// appendDenied): on both paths, the row that spends the allowance says the
// next ones are counted, not written, and no row before it says so.
func TestFixAudit13CrossSiteLimitLeavesATrace(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, who := b.SignIn(t, "acme:oncall")
	const tries = 15
	for range tries {
		resp := b.Do(t, client, http.MethodPost, "/audit/verify", url.Values{}, crossSite)
		require.Equal(t, http.StatusForbidden, resp.Status)
	}
	rows := b.AuditCount(t, `action = 'csrf.denied' AND actor_subject = $1`, who.Subject)
	require.Equal(t, 10, rows, "precondition: a burst of 10 is written")
	marked := `action = 'csrf.denied' AND actor_subject = $1 AND reason LIKE '%reaches the per-person limit%counted, not written%'`
	assert.Equal(t, 1, b.AuditCount(t, marked, who.Subject), "the tenth row says the next ones are not written")
	last := b.AuditCount(t, marked+` AND seq = (SELECT max(seq) FROM audit_log WHERE action = 'csrf.denied' AND actor_subject = $1)`, who.Subject)
	assert.Equal(t, 1, last, "it is the last row written")
}
