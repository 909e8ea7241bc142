package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb12ExportFailingBeforeItsTransactionIsAuditedOK: auditExport
// writes the export's own rows (audit.export, outcome ok) first, then
// records the head checkpoint and finds where the export ends
// (audit.ExportEnd, on the web pool with its 15 s statement_timeout),
// and only then opens the export's transaction. Its doc says "either way
// the failure is audited beside the export's row", but only a failure
// inside the transaction is (auditExportFailed): one of Checkpoints.Record
// or ExportEnd returns at once (web/audit_export.go:95-106), and the log
// keeps "audit.export ok" for an export that sent nothing. ExportEnd's
// max(seq) over the filter is the query most likely to run past the web
// pool's statement timeout on a large log (a 503 "Took too long"); here
// it fails at once on a filter PostgreSQL refuses (a NUL byte, see
// TestRevWeb12UnstorableFilterTextIsA500).
//
// Severity: low (the audit log says someone exported entries they never
// received; an auditor reading it counts a disclosure that did not
// happen). Expected: every audit.export row written for a request that
// did not answer 200 has its failed row beside it (or none is written
// before the export can start).
func TestRevWeb12ExportFailingBeforeItsTransactionIsAuditedOK(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, _ := b.SignIn(t, "*:auditor")

	r := b.Do(t, client, http.MethodGet, "/audit/export.csv?actor=kate%00", nil,
		map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"})
	require.NotEqual(t, http.StatusOK, r.Status, "the export did not happen")

	ok := b.AuditCount(t, "action = 'audit.export' AND outcome = 'ok'")
	failed := b.AuditCount(t, "action = 'audit.export' AND outcome = 'error'")
	assert.Equal(t, ok, failed,
		"an export answered %d (nothing sent) is in the audit log as %d export(s) that went ok and %d that failed", r.Status, ok, failed)
}
