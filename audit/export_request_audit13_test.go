package audit_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevAudit13RequestExportSaysItsFilter: the audit log's "request=N"
// filter (Filter.Request, round 12: the request page's "audit log" link,
// and its CSV/JSONL export links) selects a replay request's entries, but
// filterText, which the export's signed trailer records, leaves it out.
// An export of one request alone then says it is not filtered: it holds
// stubs and starts past seq 1, so VerifyExport refuses the console's own
// signed export. With a tenant filter beside it, the signature vouches for
// "every entry of tenant acme" while the file holds one request's: an
// auditor checking it is told, signed, that the tenant's other entries are
// not there because they are not in the log.
func TestRevAudit13RequestExportSaysItsFilter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	other := event("auth.login")
	req := event("replay.request")
	req.ObjectType, req.ObjectID = "replay_request", "7"
	approve := event("replay.approve")
	approve.ObjectType, approve.ObjectID = "replay_request", "7"
	unrelated := event("replay.request")
	unrelated.ObjectType, unrelated.ObjectID = "replay_request", "8"
	appendAll(t, b, other, req, unrelated, approve, event("auth.login"))
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	keys := audit.NewKeySet(signer.PublicKey())

	t.Run("RequestAlone", func(t *testing.T) {
		var out bytes.Buffer
		f := audit.Filter{Tenants: []string{audit.AllTenants}, Request: 7}
		require.NoError(t, audit.ExportJSONLSigned(b.ctx, b.db.Pool, f, head, signer, &out))
		res, err := audit.VerifyExport(strings.NewReader(out.String()), keys)
		require.NoError(t, err)
		assert.True(t, res.OK(), "the console's own signed export of request 7 does not verify: %s", res.String())
		assert.Contains(t, res.Filter, "request", "the signed filter must say the entries were selected by request")
	})
	t.Run("RequestInTenant", func(t *testing.T) {
		var out bytes.Buffer
		f := audit.Filter{Tenants: []string{audit.AllTenants}, Tenant: "acme", Request: 7}
		require.NoError(t, audit.ExportJSONLSigned(b.ctx, b.db.Pool, f, head, signer, &out))
		res, err := audit.VerifyExport(strings.NewReader(out.String()), keys)
		require.NoError(t, err)
		require.True(t, res.OK(), res.String())
		assert.Contains(t, res.Filter, "request", "signed as %q: the export claims every acme entry, and holds request 7's only", res.Filter)
	})
	t.Run("CSV", func(t *testing.T) {
		var out bytes.Buffer
		f := audit.Filter{Tenants: []string{audit.AllTenants}, Request: 7}
		require.NoError(t, audit.ExportCSVSigned(b.ctx, b.db.Pool, f, head, signer, &out))
		res, err := audit.VerifyExportCSV(strings.NewReader(out.String()), keys)
		require.NoError(t, err)
		assert.True(t, res.OK(), "the console's own signed CSV export of request 7 does not verify: %s", res.String())
		assert.Contains(t, res.Filter, "request")
	})
}
