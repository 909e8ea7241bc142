package audit_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevAudit30RequestExportPastRowsWithoutRequest: a replay request's
// export (the request page's CSV and JSON Lines links) selects its items'
// dead letters' entries that name it (after->>'request'); an entry of one
// of those dead letters without after.request (a payload download writes
// no after at all, a close writes its status and version) made the
// selection NULL, not false, and the export failed on it after its first
// bytes were sent ("cannot scan NULL into *bool"). Such an entry is a
// stub of the export, which verifies.
func TestRevAudit30RequestExportPastRowsWithoutRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	req := event("replay.request")
	req.ObjectType, req.ObjectID = "replay_request", "7"
	item := event("replay.item.replayed")
	item.ObjectType, item.ObjectID, item.After = "dead_letter", "41", map[string]any{"request": 7}
	download := event("deadletter.download") // no after
	download.ObjectType, download.ObjectID = "dead_letter", "41"
	closed := event("deadletter.resolve")
	closed.ObjectType, closed.ObjectID, closed.After = "dead_letter", "41", map[string]any{"status": "resolved", "version": 3}
	appendAll(t, b, req, download, item, closed, event("auth.login"))
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	keys := audit.NewKeySet(signer.PublicKey())
	f := audit.Filter{Tenants: []string{audit.AllTenants}, Request: 7, RequestItems: []int64{41}}

	t.Run("JSONL", func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, audit.ExportJSONLSigned(b.ctx, b.db.Pool, f, head, signer, &out))
		res, err := audit.VerifyExport(strings.NewReader(out.String()), keys)
		require.NoError(t, err)
		assert.True(t, res.OK(), res.String())
		assert.Equal(t, 2, strings.Count(out.String(), `"action":"replay.`), "the request's entry and its item's, no other: %s", out.String())
	})
	t.Run("CSV", func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, audit.ExportCSVSigned(b.ctx, b.db.Pool, f, head, signer, &out))
		res, err := audit.VerifyExportCSV(strings.NewReader(out.String()), keys)
		require.NoError(t, err)
		assert.True(t, res.OK(), res.String())
		assert.NotContains(t, out.String(), "deadletter.download")
		assert.Contains(t, out.String(), "replay.item.replayed")
	})
}
