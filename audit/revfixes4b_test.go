package audit_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// Review rev-fixes4b. The export's signature covers only the chain head
// (seq, hash, at, reason, key id): nothing signed says which entries the
// export selected (the trailer's filter is not signed) nor where it
// starts. Since hash version 3 a stub re-hashes from its seq, content
// digest and prev_hash, and an entry line shows its nonce, so whoever
// holds the file can compute any entry's content digest and write the
// entry as a stub: the entry disappears from the auditor's view and
// `console audit verify --file` still exits 0 ("proven to its signed
// head"). The same holds for the export's first lines: nothing checks
// that the first line is the first entry the filter selects (seq 1 for an
// unfiltered export), so cutting them off verifies too.
func TestRevFixes4bExportHidesAnEntryAsAStub(t *testing.T) {
	t.Parallel()
	export, keys := v3Export(t)
	lines := parseExport(t, export)
	require.Equal(t, `"replay.approve"`, string(lines[1]["action"]), "seq 2 is acme's approval")

	// The approval, made a stub: its digest from its own nonce and fields.
	e := lines[1].entry(t)
	stub := exportLine{}
	stub.set(t, "seq", e.Seq)
	stub.set(t, "left_out", true)
	stub.set(t, "hash_version", 3)
	stub.set(t, "content_digest", hex.EncodeToString(audit.ContentDigestOf(&e)))
	stub["prev_hash"] = lines[1]["prev_hash"]
	stub["hash"] = lines[1]["hash"]
	lines[1] = stub
	doctored := joinExport(t, lines)
	require.NotContains(t, doctored, "replay.approve")

	res, err := audit.VerifyExport(strings.NewReader(doctored), keys)
	require.NoError(t, err)
	assert.False(t, res.OK(), "acme's approval was hidden as a stub of acme's own export and the export still verified: %s", res)
}

// TestRevFixes4bUnfilteredExportCutAtTheFront: an export whose trailer
// says it is not filtered must hold every entry (docs/access.md), yet one
// with its first entries taken off verifies with the signed head.
func TestRevFixes4bUnfilteredExportCutAtTheFront(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	appendAll(t, b, event("deadletter.discard"), event("replay.approve"), event("auth.login"))
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, audit.ExportJSONL(b.ctx, b.db.Pool, audit.Filter{}, head, &out))
	keys := audit.NewKeySet(signer.PublicKey())
	lines := parseExport(t, out.String())
	require.Len(t, lines, 4)
	require.Equal(t, `""`, string(lines[3]["export"][bytes.IndexByte(lines[3]["export"], ':')+1:len(lines[3]["export"])-1]))
	res, err := audit.VerifyExport(strings.NewReader(out.String()), keys)
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())

	doctored := joinExport(t, lines[2:]) // seq 1 (the discard) and seq 2 taken off
	res, err = audit.VerifyExport(strings.NewReader(doctored), keys)
	require.NoError(t, err)
	assert.False(t, res.OK(), "an unfiltered export without its first two entries verified: %s", res)
}
