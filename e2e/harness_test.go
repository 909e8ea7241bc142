package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// repoRoot is the repository root (this file is in e2e/).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

var (
	buildOnce  sync.Once
	consoleBin string
	buildErr   error
)

// consoleBinary builds cmd/console once per test binary.
func consoleBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "quarantine-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		consoleBin = filepath.Join(dir, "console")
		cmd := exec.Command("go", "build", "-o", consoleBin, "./cmd/console")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build console: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return consoleBin
}

// dexBinary is the Dex built by scripts/dex.sh (make test builds it).
func dexBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("DEX_BIN")
	if p == "" {
		p = filepath.Join(repoRoot(), ".data", "bin", "dex")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("Dex binary %s not found: run the tests with `make test`, which builds it (scripts/dex.sh build)", p)
	}
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// process is a child process the test started; it is stopped at cleanup.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func start(t *testing.T, name string, env []string, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...), out: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("--- %s output ---\n%s", name, p.out.String())
		}
	})
	return p
}

// stop sends SIGTERM and waits; SIGKILL after 15 s.
func (p *process) stop(t *testing.T) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Errorf("%s did not stop on SIGTERM; killing it", p.name)
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// waitHTTP polls url until it answers 200 or the process exits.
func waitHTTP(t *testing.T, p *process, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-p.done:
			t.Fatalf("%s exited while waiting for %s: %v\n%s", p.name, url, err, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not ready after %s\n%s", p.name, url, timeout, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Dex is a running Dex with the demo users of dev/dex.yaml.tmpl.
type Dex struct {
	Issuer string
}

// DemoPassword is every demo user's password (dev/README.md).
const DemoPassword = "quarantine-demo"

func startDex(t *testing.T, redirectURIs ...string) *Dex {
	t.Helper()
	issuer := fmt.Sprintf("http://127.0.0.1:%d/dex", freePort(t))
	cfg := filepath.Join(t.TempDir(), "dex.yaml")
	args := append([]string{"config", cfg, issuer}, redirectURIs...)
	render := exec.Command(filepath.Join(repoRoot(), "scripts", "dex.sh"), args...)
	if out, err := render.CombinedOutput(); err != nil {
		t.Fatalf("render Dex config: %v\n%s", err, out)
	}
	p := start(t, "dex", nil, dexBinary(t), "serve", cfg)
	waitHTTP(t, p, issuer+"/.well-known/openid-configuration", 30*time.Second)
	return &Dex{Issuer: issuer}
}

// Console is a running console binary.
type Console struct {
	URL      string
	NATSURL  string
	DB       *testdb.DB
	proc     *process
	extraEnv []string
}

// startConsole runs `console serve` against a fresh database, an embedded
// NATS server on a free port and Dex.
func startConsole(t *testing.T, extraEnv ...string) (*Console, *Dex) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c := &Console{URL: "http://" + addr, DB: testdb.New(t)}
	dex := startDex(t, c.URL+"/auth/callback")
	natsPort := freePort(t)
	c.NATSURL = fmt.Sprintf("nats://127.0.0.1:%d", natsPort)
	env := append([]string{
		"CONSOLE_ADDR=" + addr, "DATABASE_URL=" + c.DB.URL,
		"NATS_URL=", fmt.Sprintf("NATS_EMBEDDED_ADDR=127.0.0.1:%d", natsPort), "NATS_EMBEDDED_DIR=" + t.TempDir(),
		"POLICY_FILE=" + filepath.Join(repoRoot(), "dev", "policy.toml"),
		"OIDC_ISSUER=" + dex.Issuer, "OIDC_CLIENT_ID=quarantine-console", "OIDC_CLIENT_SECRET=quarantine-dev-secret",
		"LOG_LEVEL=info",
	}, extraEnv...)
	c.extraEnv = env
	c.proc = start(t, "console", env, consoleBinary(t), "serve")
	waitHTTP(t, c.proc, c.URL+"/readyz", 60*time.Second)
	return c, dex
}

// Logs returns what the console printed so far.
func (c *Console) Logs() string { return c.proc.out.String() }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func contains(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
