package audit_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestVerifyExport: a JSON Lines export checks without the database:
// every entry's hash, the links between entries it holds in a row, and
// its signed chain head; an edited entry, a cut export, a head signed by
// a key not given, and a head checked without any key do not verify.
func TestVerifyExport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pub, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	signer := audit.NewSigner(priv)
	keys := audit.NewKeySet(pub)
	hostile := event("test.export")
	hostile.Reason, hostile.Before = "=cmd|' /C calc'!A0 <b>", map[string]any{"html": "<a&b>", "n": 1}
	appendAll(t, b, event("test.export"), hostile, event("test.other"), event("test.export"))
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	export := func(f audit.Filter) string {
		var out bytes.Buffer
		require.NoError(t, audit.ExportJSONL(b.ctx, b.db.Pool, f, head, &out))
		return out.String()
	}
	all := export(audit.Filter{})
	// A filtered export is proven by its own signature, as a console
	// with its key writes it (ExportJSONLSigned).
	signed := func(f audit.Filter) string {
		var out bytes.Buffer
		require.NoError(t, audit.ExportJSONLSigned(b.ctx, b.db.Pool, f, head, signer, &out))
		return out.String()
	}

	t.Run("Intact", func(t *testing.T) {
		res, err := audit.VerifyExport(strings.NewReader(all), keys)
		require.NoError(t, err)
		require.True(t, res.OK(), res.String())
		assert.Equal(t, int64(4), res.Entries)
		assert.Equal(t, int64(3), res.Linked)
		assert.True(t, res.Signed)
		assert.Equal(t, head.Seq, res.Head.Seq)
		assert.Contains(t, res.String(), "audit export ok: 4 entries")
	})
	t.Run("Filtered", func(t *testing.T) {
		res, err := audit.VerifyExport(strings.NewReader(signed(audit.Filter{Action: "test.export"})), keys)
		require.NoError(t, err)
		require.True(t, res.OK(), res.String())
		assert.Equal(t, int64(3), res.Entries)
		// fix-audit-chain: this asserted that an export with a gap verified
		// (Linked 1); the entry left out is now a stub, so every line links.
		assert.Equal(t, int64(1), res.LeftOut, "seq 3 is left out: a stub stands for it")
		assert.Equal(t, int64(3), res.Linked, "every line links to the one before")
		// fix-audit-v3: this asserted that seqs 1 and 2, before the stub,
		// were unproven (a stub's hash could not be recomputed); the
		// entries are of hash version 3 now, the stub carries the content
		// digest, and its hash is recomputed: none is unproven.
		assert.Zero(t, res.Unproven, "the stub's hash is recomputed from its content digest")
		assert.Equal(t, `action="test.export"`, res.Filter)
		assert.NotContains(t, export(audit.Filter{Action: "test.export"}), "test.other", "a stub shows nothing of its entry")
	})
	t.Run("FilteredStubRemoved", func(t *testing.T) {
		lines := strings.SplitAfter(export(audit.Filter{Action: "test.export"}), "\n")
		require.Contains(t, lines[2], `"left_out":true`)
		res, err := audit.VerifyExport(strings.NewReader(strings.Join(append(lines[:2:2], lines[3:]...), "")), keys)
		require.NoError(t, err)
		assert.Contains(t, res.Problem, "seq 4 follows seq 2")
	})
	t.Run("StubInUnfilteredExport", func(t *testing.T) {
		filtered := export(audit.Filter{Action: "test.export"})
		unfiltered := strings.Replace(filtered, `"export":{"filter":"action=\"test.export\""}`, `"export":{"filter":""}`, 1)
		require.NotEqual(t, filtered, unfiltered)
		res, err := audit.VerifyExport(strings.NewReader(unfiltered), keys)
		require.NoError(t, err)
		assert.Contains(t, res.Problem, "says it is not filtered")
	})
	t.Run("FromTheMiddle", func(t *testing.T) {
		res, err := audit.VerifyExport(strings.NewReader(signed(audit.Filter{After: 2})), keys)
		require.NoError(t, err)
		require.True(t, res.OK(), res.String())
		assert.Equal(t, int64(2), res.Entries)
		assert.Zero(t, res.Unproven)
	})
	t.Run("TenantScope", func(t *testing.T) {
		res, err := audit.VerifyExport(strings.NewReader(signed(audit.Filter{Tenants: []string{"globex"}})), keys)
		require.NoError(t, err)
		require.True(t, res.OK(), res.String())
		assert.Zero(t, res.Entries, "no entry of globex: nothing to export")
	})
	t.Run("Unsigned", func(t *testing.T) {
		lines := strings.SplitAfter(all, "\n")
		last := len(lines) - 2 // the trailer; the last element is ""
		lines[last] = fmt.Sprintf(`{"chain_head":{"seq":%d,"hash":"%s"}}`+"\n", head.Seq, head.HashHex())
		res, err := audit.VerifyExport(strings.NewReader(strings.Join(lines, "")), keys)
		require.NoError(t, err)
		assert.Contains(t, res.Problem, "not signed")
	})
	t.Run("Edited", func(t *testing.T) {
		edited := strings.Replace(all, `"reason":"=cmd`, `"reason":"=CMD`, 1)
		require.NotEqual(t, all, edited)
		res, err := audit.VerifyExport(strings.NewReader(edited), keys)
		require.NoError(t, err)
		assert.False(t, res.OK())
		assert.Equal(t, int64(2), res.Line)
		assert.Contains(t, res.Problem, "seq 2: hash does not match")
		assert.ErrorIs(t, res.Err(), audit.ErrChainBroken)
	})
	t.Run("CutShort", func(t *testing.T) {
		lines := strings.SplitAfter(all, "\n")
		res, err := audit.VerifyExport(strings.NewReader(strings.Join(lines[:3], "")), keys)
		require.NoError(t, err)
		assert.Contains(t, res.Problem, "no chain head")
	})
	t.Run("OtherKey", func(t *testing.T) {
		other, _, err := ed25519.GenerateKey(nil)
		require.NoError(t, err)
		res, err := audit.VerifyExport(strings.NewReader(all), audit.NewKeySet(other))
		require.NoError(t, err)
		assert.Contains(t, res.Problem, "not one of the public keys given")
	})
	t.Run("NoKey", func(t *testing.T) {
		res, err := audit.VerifyExport(strings.NewReader(all), nil)
		require.NoError(t, err)
		assert.False(t, res.OK(), res.String())
		assert.Empty(t, res.Problem, "a signature not checked is no problem of the export")
		assert.Contains(t, res.Unchecked, "no public key was given")
		assert.ErrorIs(t, res.Err(), audit.ErrNotChecked)
	})
}
