package audit_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevWebaudit15UnfilteredExportWithEveryEntryTakenOffVerifies: an
// unfiltered export (which must hold every entry: one whose first entries
// were taken off, or whose last were, is refused) with every entry line
// taken off, and the export's own signature with them, verifies against
// the public key: "audit export ok: 0 entries", exit 0 (a warning on
// stderr). Its chain head is the console's, signed, at seq 2, yet the file
// holds none of the two entries it says are the log: the checks of the
// first line (seq 1) and the last (the head's seq) are skipped when there
// is no line at all. So anyone can hand an auditor the log as empty.
func TestRevWebaudit15UnfilteredExportWithEveryEntryTakenOffVerifies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	appendAll(t, b, event("auth.login"), event("deadletter.discard"))
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)

	t.Run("JSONL", func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, audit.ExportJSONLSigned(b.ctx, b.db.Pool, audit.Filter{}, head, signer, &out))
		res, err := audit.VerifyExport(strings.NewReader(out.String()), keys)
		require.NoError(t, err)
		require.True(t, res.OK(), res.String())

		lines := parseExport(t, out.String())
		trailer := lines[len(lines)-1]
		emptied := exportLine{"chain_head": trailer["chain_head"]}
		emptied.set(t, "export", map[string]any{"filter": ""})
		res, err = audit.VerifyExport(strings.NewReader(joinExport(t, []exportLine{emptied})), keys)
		require.NoError(t, err)
		assert.False(t, res.OK(), "an unfiltered export holding none of the entries up to its signed head verifies: %s", res.String())
	})
	t.Run("CSV", func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, audit.ExportCSVSigned(b.ctx, b.db.Pool, audit.Filter{}, head, signer, &out))
		res, err := audit.VerifyExportCSV(strings.NewReader(out.String()), keys)
		require.NoError(t, err)
		require.True(t, res.OK(), res.String())

		records := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		emptied := records[0] + "\n" + records[len(records)-1] + "\n" // the header and the chain head
		res, err = audit.VerifyExportCSV(strings.NewReader(emptied), keys)
		require.NoError(t, err)
		assert.False(t, res.OK(), "an unfiltered CSV export holding none of the entries up to its signed head verifies: %s", res.String())
	})
}
