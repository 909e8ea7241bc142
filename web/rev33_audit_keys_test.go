package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevAudit33TenantAuditorGetsThePublicKeys: an auditor of some
// tenants exports their entries but cannot verify the chain here, and
// the verify result was the only place that listed the console's public
// keys (the runbook sends them there): the key inside an export vouches
// for nothing. The audit page lists the keys for such a reader, folded;
// an auditor of every tenant reads them in the verify result, as before.
func TestRevAudit33TenantAuditorGetsThePublicKeys(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	tenantAuditor, _ := b.SignIn(t, "acme:auditor")
	everyTenant, _ := b.SignIn(t, "*:auditor")

	page := b.Do(t, tenantAuditor, "GET", "/audit", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	d := page.Doc(t)
	assert.Zero(t, d.Find(`[data-testid="verify-chain"]`).Length(), "no verify here")
	keys := d.Find(`[data-testid="verify"] [data-testid="verify-key-pem"]`)
	require.GreaterOrEqual(t, keys.Length(), 1, "the public keys to check an export with")
	assert.True(t, strings.HasPrefix(strings.TrimSpace(keys.First().Text()), "-----BEGIN PUBLIC KEY-----"), keys.First().Text())
	_, open := d.Find(`[data-testid="verify-keys"]`).Attr("open")
	assert.False(t, open, "folded: the log comes first")

	all := b.Do(t, everyTenant, "GET", "/audit", nil, nil).Doc(t)
	assert.Equal(t, 1, all.Find(`[data-testid="verify-chain"]`).Length())
	assert.Zero(t, all.Find(`[data-testid="verify-keys"]`).Length(), "listed by the verify result")
}
