package audit_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevFixes4bExportKeyCaseVariantVerifies: VerifyExport reads a line
// with encoding/json, which matches keys case-insensitively and keeps the
// last of duplicates. A line whose "reason" says one thing and a later
// "REASON" says what the hash covers verifies, while every case-sensitive
// reader (jq, Python, a spreadsheet import, the auditor's eyes) reads the
// first: the export shows content its hash does not cover, and verify
// says "ok". A verifier must refuse a line with a key twice (in any case)
// or a key it does not know.
func TestRevFixes4bExportKeyCaseVariantVerifies(t *testing.T) {
	t.Parallel()
	export, keys := v3Export(t)
	lines := strings.Split(strings.TrimSuffix(export, "\n"), "\n")
	require.Contains(t, lines[1], `"reason":"approved: <b>fixed</b>"`)
	doctored := strings.Replace(lines[1], `"reason":"approved: <b>fixed</b>"`, `"reason":"nothing happened"`, 1)
	doctored = strings.TrimSuffix(doctored, "}") + `,"REASON":"approved: <b>fixed</b>"}`
	lines[1] = doctored
	res, err := audit.VerifyExport(strings.NewReader(strings.Join(lines, "\n")+"\n"), keys)
	require.NoError(t, err)
	assert.False(t, res.OK(), "a line whose reason reads \"nothing happened\" verified: %s", res)
}
