package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// artifactsDir is where screenshots, and on failure page HTML and process
// logs, are written: .data/e2e-artifacts/ (the worktree's data folder,
// ignored by git), kept after the run.
func artifactsDir() string { return filepath.Join(repoRoot(), ".data", "e2e-artifacts") }

// artifactPath is .data/e2e-artifacts/<test name>[.suffix], the test name with
// subtest slashes made underscores.
func artifactPath(t *testing.T, suffix string) string {
	name := strings.NewReplacer("/", "_", " ", "_", ":", "_").Replace(t.Name())
	if suffix != "" {
		name += "." + suffix
	}
	return filepath.Join(artifactsDir(), name)
}

// saveArtifact writes data to artifactPath(t, suffix); a failure to write
// is logged, never fatal (it must not hide the real failure).
func saveArtifact(t *testing.T, suffix string, data []byte) {
	p := artifactPath(t, suffix)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Logf("artifact %s: %v", p, err)
		return
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Logf("artifact %s: %v", p, err)
		return
	}
	t.Logf("artifact: %s", p)
}
