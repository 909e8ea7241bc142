package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestAuditVerifyPublicKeyFlagTrustsOnlyItsKeys: in serve's environment,
// verify trusts AUDIT_PUBLIC_KEYS and the signing key's public half, as
// serve does; --public-key on the command line is the whole set, so a key
// file swapped on the console's host does not vouch for itself.
func TestAuditVerifyPublicKeyFlagTrustsOnlyItsKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	kept, swapped := newKeyFile(t), newKeyFile(t)
	_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.event", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	require.NoError(t, run(ctx, []string{"console", "audit", "checkpoint", "--audit-signing-key", swapped}, env(map[string]string{"DATABASE_URL": db.URL}), io.Discard, io.Discard))
	serveEnv := env(map[string]string{"DATABASE_URL": db.URL, "AUDIT_SIGNING_KEY_FILE": swapped})

	require.NoError(t, run(ctx, []string{"console", "audit", "verify"}, serveEnv, io.Discard, io.Discard), "serve's own key, from its environment")
	var stderr bytes.Buffer
	err = run(ctx, []string{"console", "audit", "verify", "--public-key", kept + ".pub"}, serveEnv, io.Discard, &stderr)
	require.Error(t, err, "only the key named on the command line is trusted")
	assert.Contains(t, err.Error(), "not one of the public keys given")
	assert.Contains(t, stderr.String(), "the keys trusted were ")
	require.NoError(t, run(ctx, []string{"console", "audit", "verify", "--public-key", kept + ".pub", "--audit-signing-key", swapped}, serveEnv, io.Discard, io.Discard),
		"both named on the command line")
}

// TestAuditVerifyListsProblemsAndWarns: verify prints every problem it
// found, not only the first; it warns when the newest checkpoint is older
// than serve's window, and when the keys it trusted include this host's
// own signing key.
func TestAuditVerifyListsProblemsAndWarns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	key := newKeyFile(t)
	appendN := func(n int) {
		for range n {
			_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.event", Outcome: audit.OutcomeOK})
			require.NoError(t, err)
		}
	}
	appendN(2)
	require.NoError(t, run(ctx, []string{"console", "audit", "checkpoint", "--audit-signing-key", key}, env(map[string]string{"DATABASE_URL": db.URL}), io.Discard, io.Discard))
	appendN(3)

	var out, stderr bytes.Buffer
	serveEnv := env(map[string]string{"DATABASE_URL": db.URL, "AUDIT_SIGNING_KEY_FILE": key, "AUDIT_CHECKPOINT_EVERY": "2"})
	require.NoError(t, run(ctx, []string{"console", "audit", "verify"}, serveEnv, &out, &stderr))
	assert.Contains(t, out.String(), "warning: the newest checkpoint that verifies is at seq 2, 3 entries before the head: more than AUDIT_CHECKPOINT_EVERY (2)")
	assert.Contains(t, stderr.String(), "the keys trusted include this host's signing key")

	out.Reset()
	stderr.Reset()
	require.NoError(t, run(ctx, []string{"console", "audit", "verify", "--public-key", key + ".pub"}, serveEnv, &out, &stderr))
	assert.NotContains(t, stderr.String(), "this host's signing key", "--public-key alone: an independent check")

	_, err := db.OwnerPool.Exec(ctx, `ALTER TABLE audit_log DISABLE TRIGGER ALL;
        UPDATE audit_log SET reason = 'edited' WHERE seq IN (3, 5);
        ALTER TABLE audit_log ENABLE TRIGGER ALL`)
	require.NoError(t, err)
	out.Reset()
	err = run(ctx, []string{"console", "audit", "verify", "--public-key", key + ".pub"}, serveEnv, &out, io.Discard)
	require.Error(t, err)
	assert.Contains(t, out.String(), "audit chain BROKEN: seq 3: hash does not match its contents (edited row) (2 problems in all)")
	assert.Contains(t, out.String(), "also: seq 5: hash does not match its contents")
}
