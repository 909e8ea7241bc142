package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevOps8PolicyShowCanonicalWithoutVersionHashesToAVersion: README says
// `console policy show [VERSION] [--canonical]`, "--canonical prints the
// exact text whose SHA-256 is the version", and policy show's own usage
// says the same. Without VERSION, --canonical prints the active replay
// policy's text and the active retention terms' text run together, with
// nothing between them: `console policy show --canonical | sha256sum`,
// which an auditor runs to check the version in force, gives a hash that
// is neither version, and reads as a tampered record. The command must
// print one text whose hash is a version (or refuse, asking for VERSION).
func TestRevOps8PolicyShowCanonicalWithoutVersionHashesToAVersion(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	src, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	tbl, err := replaypolicy.Parse("policy.toml", src)
	require.NoError(t, err)
	require.NoError(t, replay.New(db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return tbl }}).ActivatePolicy(ctx, "host-1"))
	terms := replay.RetentionVersion(tbl.Retention())

	var out bytes.Buffer
	err = run(ctx, []string{"console", "policy", "show", "--canonical"}, env(map[string]string{"DATABASE_URL": db.URL}), &out, io.Discard)
	if err != nil {
		// Refusing, and asking for a VERSION, is a fix too: a usage error
		// that says so.
		assert.Equal(t, 2, exitCode(err), "a usage error: %v", err)
		return
	}
	sum := sha256.Sum256(out.Bytes())
	got := hex.EncodeToString(sum[:])
	assert.Contains(t, []string{tbl.Version(), terms}, got,
		"`console policy show --canonical | sha256sum` is %s: neither the active replay policy (%s) nor the active retention terms (%s)",
		got[:12], tbl.Version()[:12], terms[:12])
}
