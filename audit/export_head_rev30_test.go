package audit_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevAudit30EmptyFilteredExportKeepsItsHead: a filtered JSON Lines
// export that selected nothing holds no line to tie its chain head to, and
// its signature did not cover the head: given the head of a checkpoint
// signed later (readable from any later export, or from the checkpoints
// table), it verified, claiming, signed, that nobody approved anything up
// to that later head, though an approval was logged since. The signature
// covers the head now (manifest version 2), so the swapped file fails; an
// export signed before (version 1) still verifies as written, and swapped
// it fails too: its head was signed after the export was written.
func TestRevAudit30EmptyFilteredExportKeepsItsHead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	appendAll(t, b, event("auth.login"))
	early, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	approvals := audit.Filter{Tenants: []string{audit.AllTenants}, Action: "replay.approve"}
	var empty bytes.Buffer
	require.NoError(t, audit.ExportJSONLSigned(b.ctx, b.db.Pool, approvals, early, signer, &empty))
	res, err := audit.VerifyExport(strings.NewReader(empty.String()), keys)
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	require.Zero(t, res.Entries, "no approval up to the early head")

	appendAll(t, b, event("replay.approve"), event("auth.login"))
	later, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	require.Greater(t, later.Seq, early.Seq)
	var other bytes.Buffer // any later export shows the later head, signed
	require.NoError(t, audit.ExportJSONLSigned(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{audit.AllTenants}, Action: "auth.logout"}, later, signer, &other))
	laterHead := trailerOf(t, other.String())["chain_head"]

	swap := func(file string, head json.RawMessage) string {
		tr := trailerOf(t, file)
		tr["chain_head"] = head
		return withTrailer(t, file, tr)
	}
	t.Run("Signed", func(t *testing.T) {
		res, err := audit.VerifyExport(strings.NewReader(swap(empty.String(), laterHead)), keys)
		require.NoError(t, err)
		assert.False(t, res.OK(), "an empty export given a later head verified: %s", res.String())
		assert.Contains(t, res.Problem, "signature does not verify", "its signature covers its head")
	})
	t.Run("SignedBeforeTheHeadWasSigned", func(t *testing.T) {
		tr := trailerOf(t, empty.String())
		var x map[string]any
		require.NoError(t, json.Unmarshal(tr["export"], &x))
		sum, err := hex.DecodeString(x["lines_sha256"].(string))
		require.NoError(t, err)
		at, err := time.Parse("2006-01-02T15:04:05.000000Z07:00", x["exported_at"].(string))
		require.NoError(t, err)
		x["signature"] = hex.EncodeToString(audit.SignExportV1(signer, x["filter"].(string), sum, 0, 0, at))
		tr["export"], err = json.Marshal(x)
		require.NoError(t, err)
		v1 := withTrailer(t, empty.String(), tr)

		res, err := audit.VerifyExport(strings.NewReader(v1), keys)
		require.NoError(t, err)
		assert.True(t, res.OK(), "an export signed before version 2, as written: %s", res.String())
		res, err = audit.VerifyExport(strings.NewReader(swap(v1, laterHead)), keys)
		require.NoError(t, err)
		assert.False(t, res.OK(), "an export signed before version 2 given a later head verified: %s", res.String())
		assert.Contains(t, res.Problem, "after the export was written")
	})
}

// trailerOf is the last line of a JSON Lines export, by key.
func trailerOf(t *testing.T, file string) map[string]json.RawMessage {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(file, "\n"), "\n")
	var tr map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &tr))
	return tr
}

// withTrailer is file with its last line replaced by tr.
func withTrailer(t *testing.T, file string, tr map[string]json.RawMessage) string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(file, "\n"), "\n")
	line, err := json.Marshal(tr)
	require.NoError(t, err)
	lines[len(lines)-1] = string(line)
	return strings.Join(lines, "\n") + "\n"
}
