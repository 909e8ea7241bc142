package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRevAudit14VerifyFileWithoutKeyPassesForgedExport: the runbook
// ("AuditCheckpointStale"'s neighbour, docs/runbook.md: "`console audit
// verify --file export.jsonl` (or `export.csv`) checks an export") shows
// the check of an export without --public-key. Run so, a real export from
// the console (its chain head is always signed: serve refuses to start
// without AUDIT_SIGNING_KEY_FILE) exits 1, "no public key was given";
// but a file anyone wrote from a database of their own, with entries of
// their choosing and an unsigned chain head (which no console ever
// writes), prints "audit export ok" and exits 0. Whoever hands an auditor
// an export can so have a log they made up pass the check, by taking
// the signatures off; an auditor who forgot the key is told the real one
// is broken and the forged one is fine. An unsigned chain head should
// never verify (nothing but a forger writes one), whatever keys are given.
func TestRevAudit14VerifyFileWithoutKeyPassesForgedExport(t *testing.T) {
	t.Parallel()
	db := testdb.New(t) // the forger's own database
	ctx := context.Background()
	for _, reason := range []string{"approved after review", "looked fine"} {
		_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Tenant: "acme", Action: audit.ActionReplayApprove, Outcome: audit.OutcomeOK,
			ObjectType: "replay_request", ObjectID: "7", Reason: reason})
		require.NoError(t, err)
	}
	head, err := audit.Head(ctx, db.Pool) // unsigned: no console's key
	require.NoError(t, err)
	var forged bytes.Buffer
	require.NoError(t, audit.ExportJSONL(ctx, db.Pool, audit.Filter{}, head, &forged))
	path := filepath.Join(t.TempDir(), "export.jsonl")
	require.NoError(t, os.WriteFile(path, forged.Bytes(), 0o600))

	var out bytes.Buffer
	err = run(ctx, []string{"console", "audit", "verify", "--file", path}, env(nil), &out, io.Discard)
	require.Error(t, err, "an export whose chain head no console signed verified: %s", out.String())
	assert.NotContains(t, out.String(), "audit export ok")
}
