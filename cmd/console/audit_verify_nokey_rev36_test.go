package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRev36AuditVerifyWithoutKeyIsNotTampering: "console audit verify"
// given no public key said "audit chain BROKEN" and exited 1 for an
// intact log holding a signed checkpoint, and for an intact signed export
// (JSON Lines or CSV): a cron wrapper that lost its key setting paged
// security for tampering. Exit 1 says the log or the file was tampered
// with; a signature nobody could check is a check not made, exit 4 (as
// TestRev34AuditVerifySettingMistakesAreNotTampering has it for other
// settings), saying to give the key. What can be told without a key (an
// edited entry, lines taken off a signed export) still exits 1.
func TestRev36AuditVerifyWithoutKeyIsNotTampering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	for i := range 3 {
		_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.event", Outcome: audit.OutcomeOK, Reason: fmt.Sprint("r", i)})
		require.NoError(t, err)
	}
	keyFile := newKeyFile(t)
	signer, err := audit.LoadSigner(keyFile)
	require.NoError(t, err)
	head, err := audit.Record(ctx, db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	var jsonl, csvFile bytes.Buffer
	require.NoError(t, audit.ExportJSONLSigned(ctx, db.Pool, audit.Filter{}, head, signer, &jsonl))
	require.NoError(t, audit.ExportCSVSigned(ctx, db.Pool, audit.Filter{}, head, signer, &csvFile))
	lines := strings.SplitAfter(jsonl.String(), "\n")
	require.Len(t, lines, 5, "3 entries, the trailer, and the empty string after the last newline")
	// Seq 3's line taken off: the chain still links (seq 2 then the
	// head's seq 3 fails only as "taken off its end"), and the export's
	// own lines_sha256, which takes no key to compare, no longer matches.
	cut := lines[0] + lines[1] + lines[3]

	verify := func(args ...string) (string, string, error) {
		var out, stderr bytes.Buffer
		err := run(ctx, append([]string{"console", "audit", "verify"}, args...), env(map[string]string{"DATABASE_URL": db.URL}), &out, &stderr)
		return out.String(), stderr.String(), err
	}
	for _, tc := range []struct {
		name string
		args []string
		want int
		says string
	}{
		{"the database", nil, exitUnchecked, "audit chain NOT CHECKED: no public key was given to check the signatures of 1 checkpoint"},
		{"a JSON Lines export", []string{"--file", write("export.jsonl", jsonl.String())}, exitUnchecked, "audit export NOT CHECKED: no public key was given"},
		{"a CSV export", []string{"--file", write("export.csv", csvFile.String())}, exitUnchecked, "audit export NOT CHECKED: no public key was given"},
		{"a JSON Lines export edited", []string{"--file", write("edited.jsonl", strings.Replace(jsonl.String(), `"reason":"r1"`, `"reason":"r9"`, 1))},
			1, "seq 2: hash does not match its contents"},
		{"a CSV export edited", []string{"--file", write("edited.csv", strings.Replace(csvFile.String(), ",r1,", ",r9,", 1))},
			1, "seq 2: hash does not match its contents"},
		{"a JSON Lines export with a line taken off", []string{"--file", write("cut.jsonl", cut)}, 1, "the export's lines are not the ones it was signed with"},
	} {
		out, stderr, err := verify(tc.args...)
		require.Error(t, err, "%s: %s", tc.name, out)
		assert.Equal(t, tc.want, exitCode(err), "%s: %v\n%s", tc.name, err, out)
		assert.Contains(t, out, tc.says, tc.name)
		if tc.want == exitUnchecked {
			assert.NotContains(t, out, "BROKEN", tc.name)
			assert.Contains(t, stderr, "--public-key", "%s: says what to give", tc.name)
		}
	}

	// The log edited: found without a key, exit 1.
	_, err = db.OwnerPool.Exec(ctx, `ALTER TABLE audit_log DISABLE TRIGGER ALL;
        UPDATE audit_log SET reason = 'edited' WHERE seq = 2;
        ALTER TABLE audit_log ENABLE TRIGGER ALL`)
	require.NoError(t, err)
	out, _, err := verify()
	require.Error(t, err)
	assert.Equal(t, 1, exitCode(err), "%v", err)
	assert.Contains(t, out, "audit chain BROKEN: seq 2: hash does not match its contents")
	assert.Contains(t, out, "besides, no public key was given")
}
