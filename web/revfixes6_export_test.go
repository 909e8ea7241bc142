package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevFixes6ExportRowLeaksAnotherTenantsFilter: someone who audits acme
// and globex exports globex's entries about one message
// (?tenant=globex&message_id=...). The export is audited with one row in
// each tenant of the exporter's scope (web/audit_export.go), each row's
// reason the whole query string: acme's log gets a row, though nothing of
// acme was exported, that names the tenant globex and the globex message
// id searched for. acme's auditors, who may not see globex, read both.
// A row in a tenant must name only what the export took from it.
func TestRevFixes6ExportRowLeaksAnotherTenantsFilter(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	exporter, who := b.SignIn(t, "acme:auditor", "globex:auditor")
	const secret = "revfixes6-globex-secret-msg"
	q := url.Values{"tenant": {"globex"}, "message_id": {secret}}.Encode()
	for _, ext := range []string{"csv", "jsonl"} {
		resp := b.Do(t, exporter, http.MethodGet, "/audit/export."+ext+"?"+q, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	}
	require.Equal(t, 2, b.AuditCount(t, `action = 'audit.export' AND actor_subject = $1 AND tenant = 'globex'`, who.Subject),
		"precondition: each export is audited in globex, the tenant it exported")

	assert.Zero(t, b.AuditCount(t, `action = 'audit.export' AND actor_subject = $1 AND tenant = 'acme' AND (reason LIKE '%globex%')`, who.Subject),
		"acme's log names neither globex nor the globex message id searched for")
	colleague, _ := b.SignIn(t, "acme:auditor")
	page := b.Do(t, colleague, http.MethodGet, "/audit?"+url.Values{"action": {"audit.export"}}.Encode(), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.False(t, strings.Contains(page.Body, secret), "an auditor of acme alone reads the globex message id another tenant's export searched for")
}
