package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevOps8KeygenRefusedLeavesNoHalfPair: `console audit keygen --out
// FILE` never overwrites a file. When FILE.pub exists already (a rotation:
// the old key's public half is kept, as docs/access.md tells, for
// verifying the old checkpoints) it writes the new private key to FILE
// first, then fails on FILE.pub: FILE is now a new key sitting beside the
// OLD key's public half under the pair's names, and a second run refuses
// FILE. Whoever deploys FILE and hands FILE.pub to the auditors has
// checkpoints nobody can verify. A refused keygen must write nothing.
func TestRevOps8KeygenRefusedLeavesNoHalfPair(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := filepath.Join(dir, "audit-signing.pem")
	oldPub := []byte("the previous key's public half, kept for verifying old checkpoints\n")
	require.NoError(t, os.WriteFile(key+".pub", oldPub, 0o644))

	err := run(context.Background(), []string{"console", "audit", "keygen", "--out", key}, env(nil), io.Discard, io.Discard)
	require.Error(t, err, "FILE.pub exists: keygen must refuse")
	_, statErr := os.Stat(key)
	assert.ErrorIs(t, statErr, os.ErrNotExist, "a refused keygen wrote a private key %s whose public half is not %s.pub (%v)", key, key, err)
	got, readErr := os.ReadFile(key + ".pub")
	require.NoError(t, readErr)
	assert.Equal(t, oldPub, got)
}
