package audit_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevFixes4bExportV3EntriesPassedOffAsPreV3: the verifier refuses a
// line of version 1 or 2 only after a line of version 3. In a log whose
// every entry is of version 3, the lines before a stub can be rewritten
// as version 2 entries (fresh v2 hashes, no nonce) and that stub as a
// version 2 stub (digest taken off, prev_hash set to the rewritten
// entry's hash): nothing in the export nor its signed head says where
// version 3 began, so verify reports only "unproven, before a pre-v3
// stub" (exit 3, or 0 with --accept-unproven-pre-v3, which an auditor of a
// log that spans the upgrade passes routinely), not a doctored export.
func TestRevFixes4bExportV3EntriesPassedOffAsPreV3(t *testing.T) {
	t.Parallel()
	export, keys := v3Export(t)
	lines := parseExport(t, export)
	require.False(t, lines[1].stub())
	require.True(t, lines[2].stub())

	var prev []byte
	for i := 0; i < 2; i++ { // seqs 1 and 2, acme's entries, rewritten as version 2
		e := lines[i].entry(t)
		e.HashVersion, e.Nonce, e.PrevHash = 2, nil, prev
		if i == 1 {
			e.Reason = "nothing happened"
			lines[i].set(t, "reason", e.Reason)
		}
		delete(lines[i], "nonce")
		lines[i].set(t, "hash_version", 2)
		e.Hash = audit.HashOf(&e)
		lines[i].set(t, "hash", hex.EncodeToString(e.Hash))
		if prev != nil {
			lines[i].set(t, "prev_hash", hex.EncodeToString(prev))
		}
		prev = e.Hash
	}
	delete(lines[2], "hash_version")
	delete(lines[2], "content_digest")
	lines[2].set(t, "prev_hash", hex.EncodeToString(prev))

	res, err := audit.VerifyExport(strings.NewReader(joinExport(t, lines)), keys)
	require.NoError(t, err)
	assert.False(t, res.OK(), "entries appended as version 3, rewritten and passed off as older ones, are only \"unproven\": %s", res)
}
