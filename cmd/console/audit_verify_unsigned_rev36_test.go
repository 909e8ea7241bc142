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

// TestRev36UnsignedExportCutAtAnEarlierCheckpoint: an unfiltered export
// with its own signature taken off verified, exit 0, with a warning on
// stderr only. So whoever held a signed export of entries 1 to 5, ending
// at the checkpoint at seq 5, could cut entries 4 and 5 and end the file
// with the checkpoint at seq 3 (its signature is readable by anyone with
// the log or an earlier export) as its chain head, not filtered, and the
// auditor's check passed with 3 entries. Exports have been signed ever
// since the console signs them, but older consoles wrote such files, so
// one is no proof of tampering either: checked with the public key, it
// exits 5, saying entries after its head may have been cut off its end,
// unless --accept-unsigned accepts an older console's export (exit 0, the
// warning naming the same). JSON Lines and CSV alike.
func TestRev36UnsignedExportCutAtAnEarlierCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	keyFile := newKeyFile(t)
	signer, err := audit.LoadSigner(keyFile)
	require.NoError(t, err)
	appendN := func(n int) {
		for range n {
			_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.event", Outcome: audit.OutcomeOK, Reason: "kept"})
			require.NoError(t, err)
		}
	}
	appendN(3)
	earlier, err := audit.Record(ctx, db.Pool, signer, audit.ReasonOnDemand)
	require.NoError(t, err)
	require.Equal(t, int64(3), earlier.Seq)
	appendN(2)
	head, err := audit.Record(ctx, db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	require.Equal(t, int64(5), head.Seq)

	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	// cut is the signed export's first keep lines (after its header,
	// for CSV) and, as its last line, the unsigned trailer of the same
	// format ending at the earlier checkpoint: what the attacker writes.
	cut := func(signed, unsignedAtEarlier string, keep int) string {
		lines := strings.SplitAfter(signed, "\n")
		trailer := strings.SplitAfter(unsignedAtEarlier, "\n")
		return strings.Join(lines[:keep], "") + trailer[len(trailer)-2]
	}
	var jsonl, jsonlEarlier, csvSigned, csvEarlier bytes.Buffer
	require.NoError(t, audit.ExportJSONLSigned(ctx, db.Pool, audit.Filter{}, head, signer, &jsonl))
	require.NoError(t, audit.ExportJSONL(ctx, db.Pool, audit.Filter{}, earlier, &jsonlEarlier))
	require.NoError(t, audit.ExportCSVSigned(ctx, db.Pool, audit.Filter{}, head, signer, &csvSigned))
	require.NoError(t, audit.ExportCSV(ctx, db.Pool, audit.Filter{}, earlier, &csvEarlier))
	exports := []struct{ name, signed, cut string }{
		{"JSONL", write("export.jsonl", jsonl.String()), write("cut.jsonl", cut(jsonl.String(), jsonlEarlier.String(), 3))},
		{"CSV", write("export.csv", csvSigned.String()), write("cut.csv", cut(csvSigned.String(), csvEarlier.String(), 4))},
	}

	verify := func(args ...string) (string, string, error) {
		var out, stderr bytes.Buffer
		err := run(ctx, append([]string{"console", "audit", "verify", "--public-key", keyFile + ".pub"}, args...), env(nil), &out, &stderr)
		return out.String(), stderr.String(), err
	}
	for _, x := range exports {
		t.Run(x.name, func(t *testing.T) {
			out, _, err := verify("--file", x.signed)
			require.NoError(t, err, "the export as the console wrote it: %s", out)
			assert.Contains(t, out, "audit export ok: 5 entries")

			out, stderr, err := verify("--file", x.cut)
			require.Error(t, err, "an export cut back to an earlier checkpoint passed: %s", out)
			assert.Equal(t, exitUnsigned, exitCode(err), "%v", err)
			assert.Contains(t, err.Error(), "nothing proves it ended at its chain head, seq 3")
			assert.Contains(t, err.Error(), "cut off its end")
			assert.Contains(t, err.Error(), "--accept-unsigned")
			assert.Contains(t, out, "3 entries")
			assert.Contains(t, out, "nothing proves it ended at seq 3")
			assert.Contains(t, stderr, "its newest entries may have been cut off its end")

			out, stderr, err = verify("--file", x.cut, "--accept-unsigned")
			require.NoError(t, err, "an older console's export, accepted: %s", out)
			assert.Contains(t, stderr, "its newest entries may have been cut off its end", "accepted, still said")
		})
	}
}
