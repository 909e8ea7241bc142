package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine/testfactory/ports"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// proc is a child process a test started: the console, Dex, a NATS server
// or PostgreSQL. Each run gets its own process group, so stopping it also
// stops anything it forked; the kernel kills it when the test binary dies
// (Pdeathsig), and the test's cleanup stops it whatever the outcome. A proc
// can be stopped or killed and started again with the same command line,
// which is how the fault tests restart servers on the same ports and data.
type proc struct {
	name       string
	bin        string
	args       []string
	env        []string // added to os.Environ()
	dir        string
	cred       *syscall.Credential // run as another user (PostgreSQL as root)
	stopSignal syscall.Signal      // graceful stop; SIGTERM when zero
	out        *syncBuffer         // output of every run, runs separated by a marker line

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current run exited
	err  error         // cmd.Wait of the current run, valid after done
	runs int
}

// startProc starts p and registers its cleanup: at the end of the test it
// is stopped (killed if it does not stop within 20 s), and on failure its
// output goes to the artifacts folder.
func startProc(t *testing.T, p *proc) *proc {
	t.Helper()
	if p.out == nil {
		p.out = &syncBuffer{}
	}
	t.Cleanup(func() {
		if t.Failed() {
			saveArtifact(t, p.name+".log", []byte(p.Output()))
		}
	})
	t.Cleanup(func() { p.stopOrKill(t, 20*time.Second) })
	p.Start(t)
	return p
}

// Start runs the process (again). It fails the test if it is running.
func (p *proc) Start(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.done) {
		t.Fatalf("%s: start while running", p.name)
	}
	p.runs++
	fmt.Fprintf(p.out, "----- %s: run %d at %s -----\n", p.name, p.runs, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: p.cred}
	done := make(chan struct{})
	started := make(chan error, 1)
	// Pdeathsig fires when the thread that started the child exits, not the
	// process: start and wait on one locked thread (go.dev/issue/27505).
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	if err := <-started; err != nil {
		t.Fatalf("start %s (%s): %v", p.name, p.bin, err)
	}
	p.cmd, p.done, p.err = cmd, done, nil
}

// Running reports whether the current run has not exited.
func (p *proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !isClosed(p.done)
}

// Exited is closed when the current run exits.
func (p *proc) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// ExitErr is how the current run ended (nil: status 0); call after Exited.
func (p *proc) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Pid is the process id of the current run.
func (p *proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Output is what every run printed so far.
func (p *proc) Output() string { return p.out.String() }

// Stop stops the process gracefully (its stop signal) and waits until it
// exits; the test fails if it has not exited after timeout (it is then
// killed).
func (p *proc) Stop(t *testing.T, timeout time.Duration) {
	t.Helper()
	if !p.stopOrKill(t, timeout) {
		t.Fatalf("%s did not stop within %s after %s; killed it", p.name, timeout, p.signal())
	}
}

// Kill sends SIGKILL to the process group, as `kill -9` does, and waits
// until the process is gone.
func (p *proc) Kill(t *testing.T) {
	t.Helper()
	if !p.Running() {
		t.Fatalf("%s: kill while not running", p.name)
	}
	p.killGroup()
	select {
	case <-p.Exited():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still running 30 s after SIGKILL", p.name)
	}
}

// Restart stops the process gracefully and starts it again.
func (p *proc) Restart(t *testing.T, timeout time.Duration) {
	t.Helper()
	p.Stop(t, timeout)
	p.Start(t)
}

func (p *proc) signal() syscall.Signal {
	if p.stopSignal == 0 {
		return syscall.SIGTERM
	}
	return p.stopSignal
}

// stopOrKill signals the process and waits up to timeout, then kills the
// group. It reports whether the process stopped by itself. Whatever
// happens, nothing of the group is left running.
func (p *proc) stopOrKill(t *testing.T, timeout time.Duration) bool {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return true
	}
	graceful := true
	if !isClosed(done) {
		_ = cmd.Process.Signal(p.signal())
		select {
		case <-done:
		case <-time.After(timeout):
			graceful = false
			t.Logf("%s: still running %s after %s; sending SIGKILL", p.name, timeout, p.signal())
		}
	}
	p.killGroup() // leftovers of the group, if any
	<-done
	return graceful
}

func (p *proc) killGroup() {
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
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

// freePort returns a loopback TCP port nobody listens on right now and
// that no other test of this binary was given (ports.Free).
func freePort(t *testing.T) int {
	t.Helper()
	return ports.Free(t)
}

// whileRunning is a wait condition that gives up at once when one of
// procs has exited: cond, with that process's last output.
func whileRunning(cond func() error, procs ...*proc) func() error {
	return func() error {
		err := cond()
		if err == nil {
			return nil
		}
		for _, p := range procs {
			if !p.Running() {
				return wait.Stop(fmt.Errorf("%s exited (%v) while waiting; last: %w\n%s", p.name, p.ExitErr(), err, tail(p.Output(), 40)))
			}
		}
		return err
	}
}

// httpOK is a wait condition: url answers 200.
func httpOK(url string) func() error {
	client := &http.Client{Timeout: 2 * time.Second}
	return func() error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// testContext is a context that ends with the test (or after limit).
func testContext(t *testing.T, limit time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	return ctx
}
