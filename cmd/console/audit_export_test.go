package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestAuditVerifyFileCommand: "console audit verify --file" checks a JSON
// Lines export with the public key alone, no database; an edited entry
// exits 1 naming it.
func TestAuditVerifyFileCommand(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	for i := range 3 {
		_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.event", Outcome: audit.OutcomeOK, Reason: fmt.Sprint("r", i)})
		require.NoError(t, err)
	}
	keyFile := newKeyFile(t)
	signer, err := audit.LoadSigner(keyFile)
	require.NoError(t, err)
	head, err := audit.Record(ctx, db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	var export bytes.Buffer
	require.NoError(t, audit.ExportJSONL(ctx, db.Pool, audit.Filter{}, head, &export))
	dir := t.TempDir()
	intact, edited := filepath.Join(dir, "export.jsonl"), filepath.Join(dir, "edited.jsonl")
	require.NoError(t, os.WriteFile(intact, export.Bytes(), 0o600))
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(export.String(), `"reason":"r1"`, `"reason":"r9"`, 1)), 0o600))

	var out bytes.Buffer
	e := env(nil) // no DATABASE_URL: an export needs none
	require.NoError(t, run(ctx, []string{"console", "audit", "verify", "--file", intact, "--public-key", keyFile + ".pub"}, e, &out, io.Discard))
	assert.Contains(t, out.String(), "audit export ok: 3 entries, 2 linked")
	assert.Contains(t, out.String(), "signed")

	out.Reset()
	err = run(ctx, []string{"console", "audit", "verify", "--file", edited, "--public-key", keyFile + ".pub"}, e, &out, io.Discard)
	require.Error(t, err)
	assert.Equal(t, 1, exitCode(err))
	assert.Contains(t, out.String(), "seq 2: hash does not match")
}
