package web_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// stalledGet sends GET path with cookie on a connection whose receive
// buffer is tiny and never read past the status line: the console's write
// of a large body blocks, so its handler keeps running (as for a client on
// a slow link, or one that stopped reading). It returns the status.
func stalledGet(t *testing.T, base, path string, cookie *http.Cookie) int {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(context.Background(), "tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nCookie: %s=%s\r\nSec-Fetch-Site: same-origin\r\n\r\n", path, u.Host, cookie.Name, cookie.Value)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	line, err := bufio.NewReaderSize(conn, 64).ReadString('\n')
	require.NoError(t, err)
	var status int
	_, err = fmt.Sscanf(strings.TrimPrefix(line, "HTTP/1.1 "), "%d", &status)
	require.NoError(t, err)
	return status
}

// TestRevWeb12TextDownloadsAreNotBounded: a payload download is read whole
// and then written, and holds its bytes while a slow client reads them, so
// downloadBounds allow two per person and eight per replica (64 MiB at
// most), and refuse more with 429. The dead letter's error, headers and
// stack downloads (GET /deadletters/:id/error.txt, headers.json,
// stack.txt: deadLetterText, routes_triage.go:24-26) are read whole the
// same way, and can be as large: Dlq-Stack and Dlq-Error are headers,
// bounded only by the message's max_payload (8 MiB), and are stored
// whole. Their routes declare no DownloadKind (only .downloads() sets
// one, and it also marks a write, which these are not), so limitDownload
// lets through any number at once: a reader of one tenant (an auditor
// will do), or a script with their cookie, holds as many 8 MiB buffers on
// a replica as it opens connections that read slowly, past the bound
// meant to keep replica memory and the pages' responsiveness safe.
//
// Here one person holds two stalled downloads of a 6 MiB payload, and a
// third is refused (429), as designed; with two stalled downloads of a
// 6 MiB stack trace, a third is served.
//
// Severity: low (memory of a replica, by a signed-in reader).
// Expected: the text downloads count as downloads (DownloadPayload's
// bound, or a kind of their own), separately from whether they write.
func TestRevWeb12TextDownloadsAreNotBounded(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	big := strings.Repeat("at com.example.Handler.process(Handler.java:42)\n", 6<<20/48)
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Stack: big, Payload: []byte(big)})
	var stored int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT octet_length(stack) FROM dead_letters WHERE id = $1", id).Scan(&stored))
	require.GreaterOrEqual(t, stored, 6<<20-64, "the stack trace is stored whole")
	client, _ := b.SignIn(t, "acme:oncall")
	cookie := b.SessionCookie(t, client)

	// The control: payload downloads are bounded per person.
	payload := fmt.Sprintf("/deadletters/%d/payload", id)
	require.Equal(t, http.StatusOK, stalledGet(t, b.URL(), payload, cookie))
	require.Equal(t, http.StatusOK, stalledGet(t, b.URL(), payload, cookie))
	require.Equal(t, http.StatusTooManyRequests, stalledGet(t, b.URL(), payload, cookie),
		"a third payload download while two stall is refused (the control: the stalls hold)")

	stack := fmt.Sprintf("/deadletters/%d/stack.txt", id)
	require.Equal(t, http.StatusOK, stalledGet(t, b.URL(), stack, cookie))
	require.Equal(t, http.StatusOK, stalledGet(t, b.URL(), stack, cookie))
	assert.Equal(t, http.StatusTooManyRequests, stalledGet(t, b.URL(), stack, cookie),
		"a third 6 MiB stack trace download while two of the same person's stall is served: text downloads are not bounded")
}
