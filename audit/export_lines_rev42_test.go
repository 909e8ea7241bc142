package audit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRev42FilteredExportSaysWhatItsLinesAre: a filtered export of 7
// entries verified as "7 entries, 19 linked to the line before", which
// read as an error to an auditor: the 13 stubs of the entries the filter
// left out are lines the chain links too. It says so.
func TestRev42FilteredExportSaysWhatItsLinesAre(t *testing.T) {
	t.Parallel()
	filtered := audit.ExportResult{Entries: 7, LeftOut: 13, Linked: 19, Filter: `actor="oncall@example.com"`, Signed: true, ExportSigned: true}
	assert.Contains(t, filtered.String(), "audit export ok: 7 entries and 13 stubs of entries left out, 19 lines linked to the line before;")
	filtered.Unchecked = "no public key was given"
	assert.Contains(t, filtered.String(), "nothing else is wrong: 7 entries and 13 stubs of entries left out, 19 lines linked to the line before;")
	whole := audit.ExportResult{Entries: 4, Linked: 3, Signed: true}
	assert.Contains(t, whole.String(), "audit export ok: 4 entries, 3 lines linked to the line before;")
}
