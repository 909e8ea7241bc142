package web_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevPath28ExportTakesOnlyTheTenantsWhereThePersonMayExport: audit
// export is its own right, apart from reading the log. Here admins hold
// "audit export" and auditors only "audit read"; a person who is admin of
// acme and auditor of globex reads globex's log on the page, and exports
// acme's: the file holds acme's entry and none of globex's, in both
// formats. The route's gate (export somewhere) lets them through either
// way; the export's scope is the only rule that keeps globex's rows out.
func TestRevPath28ExportTakesOnlyTheTenantsWhereThePersonMayExport(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	setPolicyLines(t, b, authz.RoleAuditor, authz.ActExport)
	setPolicyLines(t, b, authz.RoleAdmin, authz.ActExport, authz.ObjAudit)
	_, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Tenant: "acme", Action: "test.rev28b_acme_entry", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	_, err = audit.AppendFunc(ctx, b.Pool, audit.Event{Tenant: "globex", Action: "test.rev28b_globex_entry", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	person, _ := b.SignIn(t, "acme:admin", "globex:auditor")

	page := b.Do(t, person, http.MethodGet, "/audit?action=test.rev28b_globex_entry", nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.Contains(t, page.Body, "test.rev28b_globex_entry", "globex's log is theirs to read")

	for _, path := range []string{"/audit/export.csv", "/audit/export.jsonl"} {
		resp := b.Do(t, person, http.MethodGet, path, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, "%s: %s", path, resp.Body)
		assert.Contains(t, resp.Body, "test.rev28b_acme_entry", "%s: acme's log is theirs to export", path)
		assert.NotContains(t, resp.Body, "test.rev28b_globex_entry", "%s: globex's log is read-only to them: never exported", path)
	}
}
