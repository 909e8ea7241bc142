package audit_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevAudit32CheckpointReasonIsAnInertCell: the reason of the
// checkpoint a signed CSV export ends at is typed by whoever recorded it
// (`console audit checkpoint --reason`); the chain-head record wrote it
// raw, so a reason starting "=" was a formula a spreadsheet ran inside a
// file the console signed. It is written inert now, as every other cell,
// and the export still verifies (the reason is read back for the head's
// signature); so do a reason with a control character and one starting
// with a quote.
func TestRevAudit32CheckpointReasonIsAnInertCell(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	for _, c := range []struct{ name, reason, cell string }{
		{"Formula", `=HYPERLINK("http://x","ok")`, `'=HYPERLINK("http://x","ok")`},
		{"Control", "ok\x1b[2Jthen", `'"ok\x1b[2Jthen"`},
		{"Quote", "'quoted", "''quoted"},
		{"Plain", "before the audit", "before the audit"},
	} {
		appendAll(t, b, event("auth.login"))
		head, err := audit.Record(b.ctx, b.db.Pool, signer, c.reason)
		require.NoError(t, err, c.name)
		var out bytes.Buffer
		require.NoError(t, audit.ExportCSVSigned(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{audit.AllTenants}}, head, signer, &out), c.name)
		records := csvRecords(t, out.String())
		chainHead := records[len(records)-1]
		assert.Equal(t, c.cell, chainHead[4], "%s: the chain head's reason cell", c.name)
		res, err := audit.VerifyExportCSV(strings.NewReader(out.String()), keys)
		require.NoError(t, err, c.name)
		assert.True(t, res.OK(), "%s: %s", c.name, res.String())
	}
}
