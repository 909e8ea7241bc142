package audit_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestExportSignPreV3FilteredExportIsSigned: a filtered export that holds
// only entries appended before hash version 3 is signed as any other (the
// signature covers the lines as exported, whatever their hash version),
// and with that signature taken off it no longer verifies: nothing else
// proves its filter, its first line or which entries are stubs, so a
// stripped one cannot pass as an export from an older console.
func TestExportSignPreV3FilteredExportIsSigned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	insertV2(t, b, "acme", "globex", "acme", "globex") // seqs 1 to 4, all of version 2
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, audit.ExportJSONLSigned(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{"acme"}}, head, signer, &out))
	export := out.String()
	require.NotContains(t, export, `"hash_version":3`, "every line is of an entry before version 3")

	res, err := audit.VerifyExport(strings.NewReader(export), keys)
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	assert.True(t, res.ExportSigned, "signed as an export of version 3 entries is: %s", res)
	assert.Equal(t, int64(2), res.Entries)
	assert.Equal(t, int64(2), res.LeftOut)

	lines := parseExport(t, export)
	trailer := lines[len(lines)-1]
	stripped := append(append([]exportLine{}, lines[:len(lines)-1]...), exportLine{"chain_head": trailer["chain_head"]})
	stripped[len(stripped)-1].set(t, "export", map[string]any{"filter": `tenants="acme"`})

	t.Run("SignatureTakenOff", func(t *testing.T) {
		res, err := audit.VerifyExport(strings.NewReader(joinExport(t, stripped)), keys)
		require.NoError(t, err)
		require.False(t, res.OK(), "a filtered export without its signature verified: %s", res)
		assert.Contains(t, res.Problem, "must carry the console's signature")
	})
	t.Run("SignatureTakenOffAndEntryMadeAStub", func(t *testing.T) {
		// Seq 3 (acme's) passed off as left out: without the signature,
		// a pre-v3 stub needs no digest, so only the signature tells.
		doctored := append([]exportLine{}, stripped...)
		doctored[2] = exportLine{"seq": lines[2]["seq"], "left_out": []byte("true"), "prev_hash": lines[2]["prev_hash"], "hash": lines[2]["hash"]}
		res, err := audit.VerifyExport(strings.NewReader(joinExport(t, doctored)), keys)
		require.NoError(t, err)
		require.False(t, res.OK(), "an entry hidden as a stub verified: %s", res)
	})
}
