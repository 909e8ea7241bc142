package web_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// rev19bChild marks the process a test re-runs itself in (farCursorChild).
const rev19bChild = "REV19B_FAR_CURSOR_CHILD"

// TestRevWeb19FarCursorTextSearchLoopsForever: the dead letter list's page
// cursors are opaque base64 of "<unix micros>:<id>" (dlq.Cursor), decoded
// without any bound on the time. With a text search (q), ListDeadLetters
// reads windows of time outward from the cursor (dlq.textWindows), and
// then, to know whether the page has neighbours, windows the other way
// from it. textWindows grows a window eightfold each step in a
// time.Duration (at most 292 years): from a cursor more than 292 years
// from now on the side the loop must reach (before= a cursor in year 1000,
// after= one in year 5000: both valid PostgreSQL timestamps), the window
// overflows, wraps, reaches 0 and the loop appends spans forever. One GET
// by anyone who may read dead letters makes the console's process (its
// ingest and replay workers with it) allocate until the host kills it.
//
// The request runs in a child process whose address space is capped
// (RLIMIT_AS, 1.5 GiB over what it uses when it sends it): on the current
// code the child dies with "fatal error: runtime: out of memory" inside
// dlq.textWindows; once the cursor's time is bounded (or the loop is),
// the child answers the page (or its 422) and exits 0.
func TestRevWeb19FarCursorTextSearchLoopsForever(t *testing.T) {
	if os.Getenv(rev19bChild) != "" {
		farCursorChild(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRevWeb19FarCursorTextSearchLoopsForever$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), rev19bChild+"=1", "GOTRACEBACK=single")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		text := out.String()
		first := ""
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "fatal error") || strings.Contains(l, "dlq.textWindows") {
				first += l + "\n"
			}
		}
		if len(text) > 4000 {
			text = text[:4000]
		}
		t.Fatalf("a text search from a far page cursor did not come back (%v):\n%s\n--- child output (start) ---\n%s", err, first, text)
	}
}

// farCursorChild is the child process: a console, a dead letter, and the
// list searched from far cursors under an address-space cap.
func farCursorChild(t *testing.T) {
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	viewer, _ := b.SignIn(t, "acme:viewer")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", Error: "refund failed: timeout"})
	capAddressSpace(t, 3<<29) // 1.5 GiB over what the process maps now

	page := map[string]string{"Accept": "text/html"}
	for _, c := range []struct {
		param string
		at    time.Time
	}{
		{"before", time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"after", time.Date(5000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		cursor := dlq.Cursor{At: c.at, ID: 1}.Encode()
		resp := b.Do(t, viewer, http.MethodGet, "/deadletters?q=refund&"+c.param+"="+cursor, nil, page)
		assert.Contains(t, []int{http.StatusOK, http.StatusUnprocessableEntity}, resp.Status, "%s=%s", c.param, c.at)
	}
}

// capAddressSpace limits the process's address space to what it maps now
// plus extra bytes.
func capAddressSpace(t *testing.T, extra uint64) {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	var vmKB uint64
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmSize:" {
			vmKB, err = strconv.ParseUint(f[1], 10, 64)
			require.NoError(t, err)
		}
	}
	require.NotZero(t, vmKB)
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_AS, &lim))
	lim.Cur = vmKB<<10 + extra
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_AS, &lim))
}
