package web_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixWeb12ExportFailingAfterItsRowsIsAuditedFailed: an export whose
// rows say ok and which then fails before sending anything (here signing
// the head: PostgreSQL refuses the checkpoint) has its failed row beside
// each ok row, saying why, as one failing while it sends has.
func TestFixWeb12ExportFailingAfterItsRowsIsAuditedFailed(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, _ := b.SignIn(t, "*:auditor")
	ctx := context.Background()
	_, err := b.DB.OwnerPool.Exec(ctx, `
CREATE FUNCTION refuse_checkpoint() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'no checkpoint today'; END $$;
CREATE TRIGGER refuse_checkpoint BEFORE INSERT ON audit_checkpoints FOR EACH ROW EXECUTE FUNCTION refuse_checkpoint();`)
	require.NoError(t, err)

	for _, format := range []string{"csv", "jsonl"} {
		r := b.Do(t, client, http.MethodGet, "/audit/export."+format, nil,
			map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"})
		require.Equal(t, http.StatusInternalServerError, r.Status, "the head could not be signed: nothing was sent")
		ok := b.AuditCount(t, "action = 'audit.export' AND outcome = 'ok' AND object_id = $1", format)
		failed := b.AuditCount(t, "action = 'audit.export' AND outcome = 'error' AND object_id = $1", format)
		require.Positive(t, ok, "the export's own rows are written first")
		assert.Equal(t, ok, failed, "%s: each ok row of an export that sent nothing has its failed row", format)
	}
}
