package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevRetention27VerifyChainOfferedOnlyToWhoMayRunIt: the audit page
// offers "Verify chain" to an auditor of every tenant, who may run it, and
// not to an auditor of one tenant, whom the check (of the whole chain,
// every tenant's entries) refuses.
func TestRevRetention27VerifyChainOfferedOnlyToWhoMayRunIt(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	tenant, _ := b.SignIn(t, "acme:auditor")
	every, _ := b.SignIn(t, "*:auditor")

	page := b.Do(t, tenant, http.MethodGet, "/audit", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.Zero(t, page.Doc(t).Find(`[data-testid="verify-chain"]`).Length(), "acme's auditor is offered no check it may not run")
	assert.Equal(t, http.StatusForbidden, b.Do(t, tenant, http.MethodPost, "/audit/verify", nil, nil).Status, "precondition: it is refused to them")

	page = b.Do(t, every, http.MethodGet, "/audit", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.Equal(t, 1, page.Doc(t).Find(`[data-testid="verify-chain"]`).Length(), "an auditor of every tenant is offered the check")
}
