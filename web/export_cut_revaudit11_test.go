package web_test

import (
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevAudit11ExportCutShortIsNotDeliveredAsComplete: an export that
// fails after its headers went out (web/audit_export.go: "Headers are
// gone; the missing trailer tells the reader it is cut") ends its HTTP
// response cleanly: status 200, a well-terminated body, so a browser (or
// curl, or the test's client) reports the download complete and the
// auditor holds a spreadsheet of the rows before the failure with nothing
// saying the rest is missing. Only running `console audit verify --file`
// on it would tell. Here the failure is a real one: a row of another
// tenant whose stored hash is not the hash of its content digest (since
// migration 0070 the chain guard refuses one from the runtime role: a row
// written by the owner with the guard off, or a bug) makes the signed CSV
// export stop at its
// stub (audit.exportCSV refuses to sign past it). A tenant's auditor
// cannot run verify on the database (the page offers it to auditors of
// every tenant only).
//
// (With the failure this early the file is empty: csv.Writer's buffer
// never reached the connection; a 200 and zero bytes.)
//
// The export must fail visibly: an error status before the body, or a
// response the client cannot read to its end (the handler aborting the
// connection, panic(http.ErrAbortHandler), so the chunked body is never
// terminated and the browser marks the download failed).
func TestRevAudit11ExportCutShortIsNotDeliveredAsComplete(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	mine, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Tenant: "acme", Action: "test.mine", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	// The bad row, continuing the chain, with a hash that is no hash of
	// its digest: the chain guard refuses it from the runtime role
	// (migration 0070), so the owner writes it with the guard off.
	hash, digest := sha256.Sum256([]byte("not the hash")), sha256.Sum256([]byte("not the digest"))
	b.DB.ExecWithoutTrigger(t, 0x5141554449540001, "audit_log", "audit_log_continues_chain", `
        INSERT INTO audit_log (seq, at, actor_email_verified, tenant, action, outcome, prev_hash, hash, hash_version, content_digest, nonce)
        SELECT seq + 1, GREATEST(at, clock_timestamp()), false, 'globex', 'test.bad', 'ok', hash, $1, 3, $2, $3
        FROM audit_log ORDER BY seq DESC LIMIT 1`, hash[:], digest[:], make([]byte, 16))
	require.Greater(t, mine.Seq, int64(0))

	auditor, _ := b.SignIn(t, "acme:auditor")
	req, err := http.NewRequest(http.MethodGet, b.URL()+"/audit/export.csv", nil)
	require.NoError(t, err)
	resp, err := auditor.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, readErr := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && readErr == nil {
		// What the auditor saves: here not even the header (the CSV
		// writer's buffer never reached the connection), yet a 200.
		assert.NotContains(t, string(body), "# chain-head", "the export was cut short")
	}
	assert.True(t, resp.StatusCode != http.StatusOK || readErr != nil,
		"an export cut short reaches the auditor as a complete download: status %d, %d bytes read without error, no trailer:\n%s",
		resp.StatusCode, len(body), strings.TrimSpace(string(body)))
}
