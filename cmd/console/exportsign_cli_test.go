package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestExportSignCLIVerifiesCSV: "console audit verify --file" checks a CSV
// export as it checks a JSON Lines one, telling them apart by their first
// bytes: a signed CSV exits 0 saying it is signed, one with a row edited
// exits 1, one whose signature names a stub of an entry before hash
// version 3 exits 3 (unproven, as a JSON Lines export does) unless the
// auditor accepts them; and a filtered export of entries before version 3
// only, its signature taken off, exits 1.
func TestExportSignCLIVerifiesCSV(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	for _, tenant := range []string{"acme", "globex", "acme", "globex"} { // seqs 1 to 4, before version 3
		insertOldEntry(t, ctx, db, tenant)
	}
	keyFile := newKeyFile(t)
	signer, err := audit.LoadSigner(keyFile)
	require.NoError(t, err)
	oldHead, err := audit.Record(ctx, db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	for _, tenant := range []string{"acme", "globex", "acme"} { // seqs 5 to 7
		_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Tenant: tenant, Action: "test.event", Outcome: audit.OutcomeOK, Reason: "reason of " + tenant})
		require.NoError(t, err)
	}
	head, err := audit.Record(ctx, db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	csvExport := func(f audit.Filter, end audit.Checkpoint) string {
		var out bytes.Buffer
		require.NoError(t, audit.ExportCSVSigned(ctx, db.Pool, f, end, signer, &out))
		return out.String()
	}
	verify := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, append([]string{"console", "audit", "verify", "--public-key", keyFile + ".pub"}, args...), env(nil), &out, &bytes.Buffer{})
		return out.String(), err
	}
	recent := csvExport(audit.Filter{Tenants: []string{"acme"}, After: 4}, head)

	t.Run("Signed", func(t *testing.T) {
		out, err := verify("--file", write("recent.csv", recent))
		require.NoError(t, err, out)
		assert.Contains(t, out, "audit export ok: 2 entries")
		assert.Contains(t, out, "the export is signed")
	})
	t.Run("RowEdited", func(t *testing.T) {
		edited := strings.Replace(recent, "reason of acme", "reason of ACME", 1)
		require.NotEqual(t, recent, edited)
		out, err := verify("--file", write("edited.csv", edited))
		require.Error(t, err, out)
		assert.Equal(t, 1, exitCode(err))
		assert.Contains(t, out, "BROKEN")
	})
	t.Run("PreV3Unproven", func(t *testing.T) {
		path := write("old.csv", csvExport(audit.Filter{Tenants: []string{"acme"}}, oldHead)) // 1, 3; stubs 2 and 4
		out, err := verify("--file", path)
		require.Error(t, err, out)
		assert.Equal(t, 3, exitCode(err))
		assert.Contains(t, err.Error(), "before seq 4")
		out, err = verify("--file", path, "--accept-unproven-pre-v3")
		require.NoError(t, err, out)
		assert.Contains(t, out, "the export is signed")
	})
	t.Run("PreV3JSONLStripped", func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, audit.ExportJSONLSigned(ctx, db.Pool, audit.Filter{Tenants: []string{"acme"}}, oldHead, signer, &out))
		lines := strings.SplitAfter(out.String(), "\n")
		trailer := lines[len(lines)-2]
		cut := strings.Index(trailer, `,"export":`)
		require.Positive(t, cut, trailer)
		lines[len(lines)-2] = trailer[:cut] + `,"export":{"filter":"tenants=\"acme\""}}` + "\n"
		res, err := verify("--file", write("stripped.jsonl", strings.Join(lines, "")), "--accept-unproven-pre-v3")
		require.Error(t, err, res)
		assert.Equal(t, 1, exitCode(err))
		assert.Contains(t, res, "must carry the console's signature")
	})
}
