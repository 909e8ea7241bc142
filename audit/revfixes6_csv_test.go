package audit_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevFixes6CSVInertCellReArmed: the console's CSV export writes a
// value that starts a spreadsheet formula with a "'" before it (inertCell),
// and VerifyExportCSV reads a cell back with CSVValue, which takes a
// leading "'" off whether or not the export would have written one. So
// the cell "'=..." and the cell "=..." hash alike: someone who takes an
// unfiltered export's own signature off (it then verifies with a warning,
// exit 0) can turn the inert reason back into a live formula, and the
// file still verifies as the console's, to be opened in a spreadsheet by
// whoever trusts that verdict. A cell the export would not have written
// (inertCell(CSVValue(cell)) != cell) is an edit and must not verify,
// signed or not.
func TestRevFixes6CSVInertCellReArmed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	e := event("replay.approve")
	e.Reason = `=HYPERLINK("https://evil.example/","approved")`
	appendAll(t, b, event("auth.login"), e)
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, audit.ExportCSVSigned(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{audit.AllTenants}}, head, signer, &out))
	keys := audit.NewKeySet(signer.PublicKey())

	records := csvRecords(t, out.String())
	require.Equal(t, out.String(), csvJoin(t, records), "precondition: the records written back are the export's bytes")
	var edited [][]string
	armed := false
	for _, rec := range records {
		if strings.HasPrefix(rec[0], "# export-signature ") {
			continue // the export's own signature taken off
		}
		for i, cell := range rec {
			if strings.HasPrefix(cell, "'=HYPERLINK(") {
				rec[i], armed = strings.TrimPrefix(cell, "'"), true
			}
		}
		edited = append(edited, rec)
	}
	require.True(t, armed, "precondition: the export wrote the reason inert:\n%s", out.String())

	res, err := audit.VerifyExportCSV(strings.NewReader(csvJoin(t, edited)), keys)
	require.NoError(t, err)
	assert.False(t, res.OK(), "a reason the export wrote inert, edited into a live formula, must not verify: %s", res.String())

	// The same edit with the signature left on is refused by the body hash.
	var signed [][]string
	for _, rec := range csvRecords(t, out.String()) {
		for i, cell := range rec {
			rec[i] = strings.Replace(cell, "'=HYPERLINK(", "=HYPERLINK(", 1)
		}
		signed = append(signed, rec)
	}
	res, err = audit.VerifyExportCSV(strings.NewReader(csvJoin(t, signed)), keys)
	require.NoError(t, err)
	assert.False(t, res.OK(), res.String())
}
