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

// TestRevOps26CheckpointCommandTrustsTheNextKeyDuringARotation: during a
// key rotation, replicas already switched sign the head with the next key,
// and `console audit checkpoint` run with the old key and
// AUDIT_PUBLIC_KEYS naming the next one (serve's own settings) must take
// that head as signed: it prints the next key's checkpoint and writes
// nothing. A command that ignored AUDIT_PUBLIC_KEYS would call a genuine
// checkpoint a forgery, append an audit.checkpoint_refused entry (the
// tamper signal the runbook pages on) and sign the head anew.
func TestRevOps26CheckpointCommandTrustsTheNextKeyDuringARotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	old, next := newKeyFile(t), newKeyFile(t)
	nextSigner, err := audit.LoadSigner(next)
	require.NoError(t, err)
	_, err = audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.event", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	e := env(map[string]string{"DATABASE_URL": db.URL})
	require.NoError(t, run(ctx, []string{"console", "audit", "checkpoint", "--audit-signing-key", next}, e, io.Discard, io.Discard),
		"a replica already switched signs the head with the next key")

	var out bytes.Buffer
	rotating := env(map[string]string{"DATABASE_URL": db.URL, "AUDIT_SIGNING_KEY_FILE": old, "AUDIT_PUBLIC_KEYS": next + ".pub"})
	require.NoError(t, run(ctx, []string{"console", "audit", "checkpoint"}, rotating, &out, io.Discard))
	assert.Contains(t, out.String(), "seq 1 ", "the head stays where it was: %s", out.String())
	assert.Contains(t, out.String(), "signed by key "+nextSigner.KeyID(), "the next key's checkpoint is the head's")

	var refused, entries, checkpoints int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE action = $1), count(*) FROM audit_log`,
		audit.ActionCheckpointRefused).Scan(&refused, &entries))
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_checkpoints`).Scan(&checkpoints))
	assert.Zero(t, refused, "a genuine checkpoint of the next key is no forgery")
	assert.Equal(t, 1, entries, "nothing appended")
	assert.Equal(t, 1, checkpoints, "nothing signed anew")
}
