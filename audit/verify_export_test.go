package audit_test

import (
	"bytes"
	"crypto/ed25519"
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
		res, err := audit.VerifyExport(strings.NewReader(export(audit.Filter{Action: "test.export"})), keys)
		require.NoError(t, err)
		require.True(t, res.OK(), res.String())
		assert.Equal(t, int64(3), res.Entries)
		assert.Equal(t, int64(1), res.Linked, "seq 3 is left out: only 1 and 2 are in a row")
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
		assert.Contains(t, res.Problem, "no public key was given")
	})
}
