package app

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteNewFileNeverOverwritesNorLeavesTemp: the secret lands whole with
// its mode, a second write is refused and leaves the first intact, and no
// temporary file stays behind either way.
func TestWriteNewFileNeverOverwritesNorLeavesTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	if err := WriteNewFile(path, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteNewFile(path, []byte("second\n"), 0o600); err == nil {
		t.Fatal("second write of an existing secret succeeded")
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "first\n" {
		t.Fatalf("secret = %q, %v; want the first write", b, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("directory holds %d entries (%v), want only the secret", len(entries), err)
	}
	if err := WriteNewFile(filepath.Join(dir, "missing", "token"), []byte("x"), 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}
