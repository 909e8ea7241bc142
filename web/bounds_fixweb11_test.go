package web_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/web"
)

// stalledExport starts an export of path as the holder of cookie on a
// connection that reads nothing (a small receive buffer), and returns its
// status; a 200's body is left unread until the test ends.
func stalledExport(t *testing.T, b *testfactory.Console, cookie *http.Cookie, path string) (int, string, http.Header) {
	t.Helper()
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true, ResponseHeaderTimeout: 30 * time.Second}}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, b.URL()+path, nil)
	require.NoError(t, err)
	req.AddCookie(cookie)
	resp, err := client.Do(req)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusOK {
		t.Cleanup(func() { resp.Body.Close() })
		return resp.StatusCode, "", resp.Header
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), resp.Header
}

// TestFixWeb11ExportsAreBoundedPerPersonAndPerReplica: one export per
// person at a time, three on a replica (a quarter of the test's web pool
// of 20, at most three): the others are answered 429 at once, with a
// sentence and Retry-After, and the pages keep the rest of the pool.
func TestFixWeb11ExportsAreBoundedPerPersonAndPerReplica(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	big := strings.Repeat("x", 30<<10)
	events := make([]audit.Event, 200)
	for i := range events {
		events[i] = audit.Event{Tenant: "acme", Action: "test.bulk", Outcome: audit.OutcomeOK,
			Before: map[string]any{"blob": big}, After: map[string]any{"blob": big}}
	}
	_, err := audit.AppendBatchFunc(t.Context(), b.Pool, events)
	require.NoError(t, err)

	var cookies []*http.Cookie
	for range 4 {
		c, _ := b.SignIn(t, "acme:auditor")
		cookies = append(cookies, b.SessionCookie(t, c))
	}
	status, _, _ := stalledExport(t, b, cookies[0], "/audit/export.jsonl")
	require.Equal(t, http.StatusOK, status, "the first export of a person runs")

	refused := func(cookie *http.Cookie, path, says string) func(t *testing.T) {
		return func(t *testing.T) {
			status, body, h := stalledExport(t, b, cookie, path)
			assert.Equal(t, http.StatusTooManyRequests, status)
			assert.Equal(t, "30", h.Get("Retry-After"))
			assert.Contains(t, body, says)
		}
	}
	t.Run("SecondOfThePerson", refused(cookies[0], "/audit/export.csv", "You have an export running already"))
	for _, ck := range cookies[1:3] {
		status, _, _ := stalledExport(t, b, ck, "/audit/export.jsonl")
		require.Equal(t, http.StatusOK, status, "other people's exports run, up to three on the replica")
	}
	t.Run("FourthOnTheReplica", refused(cookies[3], "/audit/export.jsonl", "as many exports as it can at once"))
	assert.LessOrEqual(t, b.Pool.Stat().AcquiredConns(), int32(3), "the exports hold three connections of the pool at most")

	oncall, _ := b.SignIn(t, "acme:oncall")
	start := time.Now()
	assert.Equal(t, http.StatusOK, b.Do(t, oncall, http.MethodGet, "/deadletters", nil, nil).Status)
	assert.Equal(t, http.StatusOK, b.Do(t, oncall, http.MethodGet, "/", nil, nil).Status)
	assert.Less(t, time.Since(start), 10*time.Second, "the pages answer while exports stall")
}

// TestFixWeb11EveryDownloadIsBounded: every GET that writes (an export, a
// payload download) is a download of a kind, bounded by the one limiter,
// and says what it starts for the refusal of another site's link. (A
// download that writes nothing, a dead letter's text, has a kind too:
// TestFixWeb12EveryFileSentIsBounded.)
func TestFixWeb11EveryDownloadIsBounded(t *testing.T) {
	t.Parallel()
	for _, r := range (&web.Server{}).Routes() {
		if !r.Writes {
			if r.Download != web.NoDownload {
				assert.Equal(t, http.MethodGet, r.Method, "%s %s: only a GET is a download", r.Method, r.Path)
			}
			continue
		}
		assert.NotEqual(t, web.NoDownload, r.Download, "%s %s: a GET that writes is bounded as a download", r.Method, r.Path)
		assert.NotNil(t, r.Starts, "%s %s: says what it starts", r.Method, r.Path)
	}
}

// TestFixWeb11StartAgainSaysWhatItStarts: the refusal of a download that
// another site started names, on its button, what the click starts.
func TestFixWeb11StartAgainSaysWhatItStarts(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:auditor", "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "fw11-again"})
	cross := map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
	for path, want := range map[string]string{
		"/deadletters/" + strconv.FormatInt(id, 10) + "/payload": "Download the payload of dead letter " + strconv.FormatInt(id, 10),
		"/replay/requests/5/items/7/payload":                     "Download the payload replay request 5 sends for dead letter 7",
		"/audit/export.jsonl":                                    "Export the whole audit log you may export, as JSON lines",
		"/audit/export.csv?tenant=acme&outcome=denied":           "Export the audit log as CSV, filtered by tenant acme, outcome denied",
	} {
		resp := b.Do(t, c, http.MethodGet, path, nil, cross)
		require.Equal(t, http.StatusForbidden, resp.Status, path)
		assert.Equal(t, want, strings.TrimSpace(byID(resp.Doc(t), "start-again").Text()), path)
	}
}

// TestFixWeb11NoRightNoBodyRead: a signed-in person without the route's
// right is refused before the body is read, as one nobody signed in; a
// body announced over the limit is still refused by its length first.
func TestFixWeb11NoRightNoBodyRead(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	viewer, _ := b.SignIn(t, "acme:viewer")
	size := int64(3 * replay.MaxEditablePayload) // under the payload route's limit
	body, feed := io.Pipe()
	t.Cleanup(func() { feed.Close() })
	req, err := http.NewRequest(http.MethodPost, b.URL()+"/replay/requests/1/items/1/payload", body)
	require.NoError(t, err)
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.URL())
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	answered := make(chan int, 1)
	go func() {
		resp, err := viewer.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	select {
	case status := <-answered:
		assert.Equal(t, http.StatusForbidden, status, "a viewer may not edit a payload")
	case <-time.After(5 * time.Second):
		t.Error("a viewer's POST to the payload edit route waits for its body before the right is looked at")
	}

	over := b.Do(t, &http.Client{}, http.MethodPost, "/deadletters/discard",
		map[string][]string{"ids": {strings.Repeat("1,", 40<<10)}}, nil)
	assert.Equal(t, http.StatusRequestEntityTooLarge, over.Status, "a body over the limit is refused by its length, before sign-in")
}

// TestFixWeb11StaleFromOutsideIsShownOnce: a threshold in a link opened
// from outside the console (a bookmark, a chat message: Sec-Fetch-Site
// none) is shown that once and not kept; one chosen on the console's own
// page is kept.
func TestFixWeb11StaleFromOutsideIsShownOnce(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	selected := func(r testfactory.Response) string {
		return byID(r.Doc(t), "stale-select").Find("option[selected]").AttrOr("value", "")
	}
	once := b.Do(t, oncall, http.MethodGet, "/?stale=4h", nil, map[string]string{"Sec-Fetch-Site": "none"})
	require.Equal(t, http.StatusOK, once.Status)
	assert.Equal(t, "4h", selected(once), "shown as the link says")
	after := b.Do(t, oncall, http.MethodGet, "/", nil, map[string]string{"Sec-Fetch-Site": "same-origin"})
	assert.Equal(t, "1h", selected(after), "not kept")

	b.Do(t, oncall, http.MethodGet, "/?stale=30m", nil, map[string]string{"Sec-Fetch-Site": "same-origin"})
	kept := b.Do(t, oncall, http.MethodGet, "/", nil, map[string]string{"Sec-Fetch-Site": "same-origin"})
	assert.Equal(t, "30m", selected(kept), "chosen on the dashboard: kept")
}

// TestFixWeb11PollReloadIsAPoll: the reload of a page a poll asked for
// (HX-Refresh, done by app.js with ?poll=1) does not move the idle
// deadline, and once the session ended it shows the sign-in page rather
// than going to the identity provider unasked.
func TestFixWeb11PollReloadIsAPoll(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	viewer, _ := b.SignIn(t, "acme:viewer")
	ctx := context.Background()
	token := b.SessionCookie(t, viewer).Value
	_, err := b.Pool.Exec(ctx, `UPDATE sessions SET expiry = now() + interval '1 minute' WHERE token = $1`, token)
	require.NoError(t, err)
	var before, after time.Time
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT expiry FROM sessions WHERE token = $1`, token).Scan(&before))
	require.Equal(t, http.StatusOK, b.Do(t, viewer, http.MethodGet, "/?poll=1", nil, nil).Status)
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT expiry FROM sessions WHERE token = $1`, token).Scan(&after))
	assert.WithinDuration(t, before, after, 2*time.Minute, "a reload a poll asked for moved the idle deadline")

	_, err = b.Pool.Exec(ctx, `UPDATE sessions SET expiry = now() - interval '1 second' WHERE token = $1`, token)
	require.NoError(t, err)
	resp := b.Do(t, viewer, http.MethodGet, "/?poll=1", nil, map[string]string{"Accept": "text/html"})
	assert.Equal(t, http.StatusUnauthorized, resp.Status, "no redirect to the identity provider")
	assert.Empty(t, resp.Header.Get("Location"))
}
