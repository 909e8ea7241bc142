package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// Dex is a running Dex (the OIDC provider) with the demo users of
// dev/dex.yaml.tmpl, rendered by scripts/dex.sh for this test's issuer and
// console callback.
type Dex struct {
	Issuer string
	proc   *proc
}

// DemoPassword is every demo user's password (dev/README.md).
const DemoPassword = "quarantine-demo"

// Demo users (dev/README.md).
const (
	userOncall    = "oncall@example.com"
	userApprover  = "approver@example.com"
	userApprover2 = "approver2@example.com"
	userAuditor   = "auditor@example.com"
	userAdmin     = "admin@example.com"
	userViewer    = "viewer@example.com"
)

// dexGroupPrefix is the AUTHZ_GROUP_PREFIX the demo users' groups carry
// (dev/dex.yaml.tmpl): "quarantine:acme:oncall" gives oncall in acme.
const dexGroupPrefix = "quarantine:"

// OIDC client registration of the console at Dex (dev/README.md).
const (
	oidcClientID     = "quarantine-console"
	oidcClientSecret = "quarantine-dev-secret"
)

func startDex(t *testing.T, redirectURIs ...string) *Dex {
	t.Helper()
	issuer := fmt.Sprintf("http://127.0.0.1:%d/dex", freePort(t))
	cfg := filepath.Join(t.TempDir(), "dex.yaml")
	args := append([]string{"config", cfg, issuer}, redirectURIs...)
	render := exec.Command(filepath.Join(repoRoot(), "scripts", "dex.sh"), args...)
	if out, err := render.CombinedOutput(); err != nil {
		t.Fatalf("render Dex config: %v\n%s", err, out)
	}
	p := startProc(t, &proc{name: "dex", bin: dexBinary(t), args: []string{"serve", cfg}})
	wait.For(t, "Dex discovery", 30*time.Second, whileRunning(httpOK(issuer+"/.well-known/openid-configuration"), p))
	return &Dex{Issuer: issuer, proc: p}
}
