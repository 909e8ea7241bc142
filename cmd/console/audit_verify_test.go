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
