package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// repoRoot is the repository root (this file is in e2e/).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// buildDir holds binaries built for this test run; TestMain removes it.
var (
	buildDirOnce sync.Once
	buildDir     string
	buildDirErr  error
)

func tempBuildDir() (string, error) {
	buildDirOnce.Do(func() { buildDir, buildDirErr = os.MkdirTemp("", "quarantine-e2e-bin-") })
	return buildDir, buildDirErr
}

// once runs a build at most once per test binary and remembers its result.
type once struct {
	sync.Once
	path string
	err  error
}

func (o *once) get(t *testing.T, build func() (string, error)) string {
	t.Helper()
	o.Do(func() { o.path, o.err = build() })
	if o.err != nil {
		t.Fatal(o.err)
	}
	return o.path
}

var consoleBuild, natsBuild, dexBuild once

// consoleBinary builds cmd/console once per test binary, from this tree.
func consoleBinary(t *testing.T) string {
	t.Helper()
	return consoleBuild.get(t, func() (string, error) {
		dir, err := tempBuildDir()
		if err != nil {
			return "", err
		}
		bin := filepath.Join(dir, "console")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/console")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("build console: %v\n%s", err, out)
		}
		return bin, nil
	})
}

// natsServerBinary is .data/bin/nats-server, built from the pinned tools/nats
// module when it is missing or older than tools/nats/go.mod or go.sum. It
// is built under a temporary name and renamed, so a concurrent run never
// sees half a binary. NATS_SERVER_BIN overrides it.
func natsServerBinary(t *testing.T) string {
	t.Helper()
	return natsBuild.get(t, func() (string, error) {
		if p := os.Getenv("NATS_SERVER_BIN"); p != "" {
			return p, nil
		}
		root := repoRoot()
		bin := filepath.Join(root, ".data", "bin", "nats-server")
		if fresh(bin, filepath.Join(root, "tools", "nats", "go.mod"), filepath.Join(root, "tools", "nats", "go.sum")) {
			return bin, nil
		}
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			return "", err
		}
		tmp := fmt.Sprintf("%s.tmp.%d", bin, os.Getpid())
		cmd := exec.Command("go", "build", "-C", filepath.Join(root, "tools", "nats"), "-o", tmp, "github.com/nats-io/nats-server/v2")
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			return "", fmt.Errorf("build nats-server from tools/nats: %v\n%s", err, out)
		}
		if err := os.Rename(tmp, bin); err != nil {
			return "", err
		}
		now := time.Now() // newer than go.mod and go.sum even if the build kept an old time
		if err := os.Chtimes(bin, now, now); err != nil {
			return "", err
		}
		return bin, nil
	})
}

// fresh reports whether bin exists and is newer than every one of srcs.
func fresh(bin string, srcs ...string) bool {
	bi, err := os.Stat(bin)
	if err != nil {
		return false
	}
	for _, s := range srcs {
		si, err := os.Stat(s)
		if err != nil || si.ModTime().After(bi.ModTime()) {
			return false
		}
	}
	return true
}

// dexBinary is DEX_BIN, or .data/bin/dex built (if needed) by
// scripts/dex.sh build, from the pinned tools/dex module.
func dexBinary(t *testing.T) string {
	t.Helper()
	return dexBuild.get(t, func() (string, error) {
		if p := os.Getenv("DEX_BIN"); p != "" {
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("DEX_BIN %s: %w", p, err)
			}
			return p, nil
		}
		root := repoRoot()
		cmd := exec.Command(filepath.Join(root, "scripts", "dex.sh"), "build")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("scripts/dex.sh build: %v\n%s", err, out)
		}
		return filepath.Join(root, ".data", "bin", "dex"), nil
	})
}

// chromiumPath is CHROMIUM, else Debian's /usr/bin/chromium, else
// chromium on PATH. make test and make e2e install it when missing.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Fatal("chromium not found: run the tests with `make test` or `make e2e`, which install it (apt-get install -y chromium), or set CHROMIUM")
	return ""
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}
