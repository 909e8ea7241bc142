package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

func TestAuditKeygen(t *testing.T) {
	t.Parallel()
	keygen := func(out string) error {
		return run(context.Background(), []string{"console", "audit", "keygen", "--out", out}, env(nil), io.Discard, io.Discard)
	}

	t.Run("Success", func(t *testing.T) {
		t.Parallel()
		key := filepath.Join(t.TempDir(), "audit-signing.pem")
		require.NoError(t, keygen(key))
		signer, err := audit.LoadSigner(key)
		require.NoError(t, err)
		pubPEM, err := audit.PublicKeyPEM(signer.PublicKey())
		require.NoError(t, err)
		got, err := os.ReadFile(key + ".pub")
		require.NoError(t, err)
		assert.Equal(t, pubPEM, got, "FILE.pub is FILE's public half")
		st, err := os.Stat(key)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	})

	t.Run("PrivateKeyExists", func(t *testing.T) {
		t.Parallel()
		key := filepath.Join(t.TempDir(), "audit-signing.pem")
		old := []byte("the key in use\n")
		require.NoError(t, os.WriteFile(key, old, 0o600))
		err := keygen(key)
		require.Error(t, err)
		assert.Contains(t, err.Error(), key+" exists")
		got, readErr := os.ReadFile(key)
		require.NoError(t, readErr)
		assert.Equal(t, old, got)
		_, statErr := os.Stat(key + ".pub")
		assert.ErrorIs(t, statErr, os.ErrNotExist, "a refused keygen wrote no public half")
	})

	t.Run("PublicKeyExists", func(t *testing.T) {
		t.Parallel()
		key := filepath.Join(t.TempDir(), "audit-signing.pem")
		require.NoError(t, os.WriteFile(key+".pub", []byte("old public half\n"), 0o644))
		err := keygen(key)
		require.Error(t, err)
		assert.Contains(t, err.Error(), key+".pub exists")
		_, statErr := os.Stat(key)
		assert.ErrorIs(t, statErr, os.ErrNotExist)
	})
}
