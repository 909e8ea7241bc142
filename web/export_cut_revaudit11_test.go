package web_test

import (
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
// tenant whose stored hash is not the hash of its content digest (the
// chain guard does not recompute hashes: a row inserted with the runtime
// role's credentials, or a bug) makes the signed CSV export stop at its
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
	// The bad row, continuing the chain as the guard checks it (seq,
	// prev_hash, at, version), with a hash that is no hash of its digest.
	require.NoError(t, pgx.BeginFunc(ctx, b.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(0x5141554449540001)); err != nil {
			return err
		}
		var seq int64
		var prev []byte
		var at time.Time
		if err := tx.QueryRow(ctx, `SELECT seq, hash, at FROM audit_log ORDER BY seq DESC LIMIT 1`).Scan(&seq, &prev, &at); err != nil {
			return err
		}
		hash, digest := sha256.Sum256([]byte("not the hash")), sha256.Sum256([]byte("not the digest"))
		_, err := tx.Exec(ctx, `INSERT INTO audit_log (seq, at, actor_email_verified, tenant, action, outcome, prev_hash, hash, hash_version, content_digest, nonce)
            VALUES ($1, GREATEST($2, clock_timestamp()), false, 'globex', 'test.bad', 'ok', $3, $4, 3, $5, $6)`,
			seq+1, at, prev, hash[:], digest[:], make([]byte, 16))
		return err
	}))
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
