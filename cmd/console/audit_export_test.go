package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	require.NoError(t, audit.ExportJSONLSigned(ctx, db.Pool, audit.Filter{}, head, signer, &export))
	dir := t.TempDir()
	intact, edited := filepath.Join(dir, "export.jsonl"), filepath.Join(dir, "edited.jsonl")
	require.NoError(t, os.WriteFile(intact, export.Bytes(), 0o600))
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(export.String(), `"reason":"r1"`, `"reason":"r9"`, 1)), 0o600))

	var out bytes.Buffer
	e := env(nil) // no DATABASE_URL: an export needs none
	require.NoError(t, run(ctx, []string{"console", "audit", "verify", "--file", intact, "--public-key", keyFile + ".pub"}, e, &out, io.Discard))
	assert.Contains(t, out.String(), "audit export ok: 3 entries, 2 lines linked to the line before")
	assert.Contains(t, out.String(), "signed")

	out.Reset()
	err = run(ctx, []string{"console", "audit", "verify", "--file", edited, "--public-key", keyFile + ".pub"}, e, &out, io.Discard)
	require.Error(t, err)
	assert.Equal(t, 1, exitCode(err))
	assert.Contains(t, out.String(), "seq 2: hash does not match")
}

// insertOldEntry writes an entry at the end of the chain as a console
// before hash version 3 did (no hash_version, no content digest; the hash
// from the database's own audit_entry_hash), with the runtime role.
func insertOldEntry(t *testing.T, ctx context.Context, db *testdb.DB, tenant string) {
	t.Helper()
	row := map[string]any{"seq": 1, "at": time.Now().Add(-time.Hour).UTC(), "tenant": tenant, "action": "replay.approve",
		"outcome": "ok", "actor_email_verified": false, "reason": "before version 3"}
	for _, empty := range []string{"actor_issuer", "actor_subject", "actor_email", "object_type", "object_id", "message_id",
		"operation_id", "request_id", "remote_addr", "user_agent"} {
		row[empty] = "" // as the columns' default, not NULL, which hashes otherwise
	}
	var seq int64
	var hash []byte
	var at time.Time
	if err := db.Pool.QueryRow(ctx, `SELECT seq, hash, at FROM audit_log ORDER BY seq DESC LIMIT 1`).Scan(&seq, &hash, &at); err == nil {
		row["seq"], row["at"], row["prev_hash"] = seq+1, at.Add(time.Second).UTC(), fmt.Sprintf(`\x%x`, hash)
	}
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT audit_entry_hash(jsonb_populate_record(NULL::audit_log, $1::jsonb))`, row).Scan(&hash))
	_, err := db.Pool.Exec(ctx, `INSERT INTO audit_log (seq, at, tenant, action, outcome, actor_email_verified, reason, prev_hash, hash)
        SELECT r.seq, r.at, r.tenant, r.action, r.outcome, r.actor_email_verified, r.reason, r.prev_hash, $2
        FROM jsonb_populate_record(NULL::audit_log, $1::jsonb) r`, row, hash)
	require.NoError(t, err)
}

// TestAuditVerifyFileUnprovenExitsNonZero: a filtered export whose
// entries come before a stub of an entry written before hash version 3
// rests on that stub's prev_hash, which no signature covers: verify --file
// exits 3 saying how many and why, unless the auditor accepts them with
// --accept-unproven-pre-v3; an export proven to its signed head exits 0.
func TestAuditVerifyFileUnprovenExitsNonZero(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	for _, tenant := range []string{"acme", "globex", "acme", "globex"} { // seqs 1 to 4
		insertOldEntry(t, ctx, db, tenant)
	}
	for _, tenant := range []string{"acme", "globex", "acme"} { // seqs 5 to 7
		_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Tenant: tenant, Action: "test.event", Outcome: audit.OutcomeOK})
		require.NoError(t, err)
	}
	keyFile := newKeyFile(t)
	signer, err := audit.LoadSigner(keyFile)
	require.NoError(t, err)
	head, err := audit.Record(ctx, db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	dir := t.TempDir()
	exportFile := func(name string, f audit.Filter) string {
		var export bytes.Buffer
		require.NoError(t, audit.ExportJSONLSigned(ctx, db.Pool, f, head, signer, &export))
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, export.Bytes(), 0o600))
		return path
	}
	unproven := exportFile("acme.jsonl", audit.Filter{Tenants: []string{"acme"}}) // stubs 2, 4 (old) and 6
	proven := exportFile("recent.jsonl", audit.Filter{Tenants: []string{"acme"}, After: 4})
	verify := func(args ...string) (string, string, error) {
		var out, stderr bytes.Buffer
		err := run(ctx, append([]string{"console", "audit", "verify", "--public-key", keyFile + ".pub"}, args...), env(nil), &out, &stderr)
		return out.String(), stderr.String(), err
	}

	t.Run("Unproven", func(t *testing.T) {
		out, stderr, err := verify("--file", unproven)
		require.Error(t, err, "an export with unproven entries: %s", out)
		assert.Equal(t, 3, exitCode(err), "not 0, and not 1 (nothing in the file is wrong)")
		assert.Contains(t, err.Error(), "2 entries are unproven")
		assert.Contains(t, err.Error(), "before seq 4")
		assert.Contains(t, err.Error(), "--accept-unproven-pre-v3")
		assert.Contains(t, out, "audit export ok")
		assert.Empty(t, stderr)
	})
	t.Run("UnprovenAccepted", func(t *testing.T) {
		out, _, err := verify("--file", unproven, "--accept-unproven-pre-v3")
		require.NoError(t, err)
		assert.Contains(t, out, "2 entries before seq 4")
	})
	t.Run("Proven", func(t *testing.T) {
		out, stderr, err := verify("--file", proven)
		require.NoError(t, err)
		assert.Contains(t, out, "audit export ok: 2 entries")
		assert.Contains(t, out, "the export is signed")
		assert.NotContains(t, out, "unproven")
		assert.Empty(t, stderr)
	})
	// An unfiltered export without a signature of its own (an older
	// console's) verifies as far as its chain goes, with a warning, and
	// exits 5 unless accepted (--accept-unsigned): nothing proves it ended
	// at its head. A filtered one of version 3 entries does not verify:
	// only its signature proves its filter, its start and its stubs.
	t.Run("UnsignedExportWarns", func(t *testing.T) {
		var export bytes.Buffer
		require.NoError(t, audit.ExportJSONL(ctx, db.Pool, audit.Filter{}, head, &export))
		path := filepath.Join(dir, "unsigned.jsonl")
		require.NoError(t, os.WriteFile(path, export.Bytes(), 0o600))
		out, stderr, err := verify("--file", path)
		require.Error(t, err)
		assert.Equal(t, exitUnsigned, exitCode(err))
		assert.Contains(t, out, "audit export ok:")
		assert.Contains(t, stderr, "the export itself is not signed")
		assert.Contains(t, stderr, "edits since the export cannot be ruled out")
		_, stderr, err = verify("--file", path, "--accept-unsigned")
		require.NoError(t, err)
		assert.Contains(t, stderr, "the export itself is not signed")

		export.Reset()
		require.NoError(t, audit.ExportJSONL(ctx, db.Pool, audit.Filter{Tenants: []string{"acme"}, After: 4}, head, &export))
		path = filepath.Join(dir, "unsigned-filtered.jsonl")
		require.NoError(t, os.WriteFile(path, export.Bytes(), 0o600))
		out, _, err = verify("--file", path)
		require.Error(t, err)
		assert.Equal(t, 1, exitCode(err))
		assert.Contains(t, out, "must carry the console's signature")
	})
}

// TestAuditVerifyThatCannotCheckExitsFour: "console audit verify" that
// cannot reach the database, or cannot open the export it is given, exits
// 4 naming what failed, not 1, which says the log was read and does not
// verify: a wrapper run from cron pages for tampering on 1 and for an
// outage on 4 (review 23f, unproven).
func TestAuditVerifyThatCannotCheckExitsFour(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A port nothing listens on: the listener is closed before the connect.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	var out, stderr bytes.Buffer
	e := env(map[string]string{"DATABASE_URL": "postgres://quarantine@" + addr + "/quarantine?connect_timeout=5"})
	err = run(ctx, []string{"console", "audit", "verify"}, e, &out, &stderr)
	require.Error(t, err)
	assert.Equal(t, 4, exitCode(err), "an unreachable database is not a broken chain: %v", err)
	assert.Contains(t, err.Error(), "connect to DATABASE_URL")

	err = run(ctx, []string{"console", "audit", "verify", "--file", filepath.Join(t.TempDir(), "missing.jsonl")}, env(nil), &out, &stderr)
	require.Error(t, err)
	assert.Equal(t, 4, exitCode(err), "an export that cannot be opened is not a broken export: %v", err)

	// Opened but not readable (a directory): 4 as well.
	err = run(ctx, []string{"console", "audit", "verify", "--file", t.TempDir()}, env(nil), &out, &stderr)
	require.Error(t, err)
	assert.Equal(t, 4, exitCode(err), "an export that cannot be read is not a broken export: %v", err)

	// Read, and longer on a line than any export writes: it does not
	// verify (1), naming the line.
	long := filepath.Join(t.TempDir(), "long.jsonl")
	require.NoError(t, os.WriteFile(long, append([]byte(`{"seq":1,"x":"`), bytes.Repeat([]byte("a"), 2<<20)...), 0o600))
	out.Reset()
	err = run(ctx, []string{"console", "audit", "verify", "--file", long}, env(nil), &out, &stderr)
	require.Error(t, err)
	assert.Equal(t, 1, exitCode(err), "a line past any export's is a problem of the file: %v", err)
	assert.Contains(t, out.String(), "line 1")
	assert.Contains(t, out.String(), "longer than 1 MiB")
}
