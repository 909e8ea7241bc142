package web_test

import (
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb11AnonymousBodyIsReadBeforeSignIn: every route's middleware
// runs limitBody before enforce (web.New adds them in that order), and
// limitBody parses an urlencoded form whole (req.ParseForm) before the
// route asks who is calling. The payload edit route reads up to
// 3 × max_payload + 64 KiB (BodyPayload: 24 MiB with NATS's 8 MiB), so a
// client nobody signed in, or a signed-in person without the right, makes
// the console read and decode that much, and hold it while the client
// sends it (ReadTimeout: 30 s), per request, for as many connections as
// it opens: the large limit meant for a requester's payload is given to
// anyone who can reach the port. A 401 (or 403/404) costs nothing when
// it comes before the body.
//
// Here the client announces a body under the route's limit (3 × max_payload
// then; 3 × replay.MaxEditablePayload since the limit is the largest edit's)
// and sends none of it: the console does not answer, because it
// waits for the body before it looks at the session.
//
// Severity: low (pre-authentication memory and connection use, up to
// 24 MiB per request). Expected: a request of a route that needs a
// signed-in person is answered 401 (and one without the route's
// permission 403) before its body is read; only the routes' own readers
// (the locator of a selection, the handler) read it, under the limit.
func TestRevWeb11AnonymousBodyIsReadBeforeSignIn(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})

	size := int64(3 * replay.MaxEditablePayload) // under the payload route's limit (3 × the largest edit + 64 KiB)
	body, feed := io.Pipe()
	t.Cleanup(func() { feed.Close() })
	req, err := http.NewRequest(http.MethodPost, b.URL()+"/replay/requests/1/items/1/payload", body)
	require.NoError(t, err)
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Content-Length", strconv.FormatInt(size, 10))

	answered := make(chan int, 1)
	go func() {
		resp, err := (&http.Client{}).Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	select {
	case status := <-answered:
		assert.Equal(t, http.StatusUnauthorized, status, "nobody is signed in")
	case <-time.After(5 * time.Second):
		t.Errorf("an anonymous POST announcing %d bytes to the payload edit route got no answer in 5 s: "+
			"the console waits to read (and parse) the whole body before it looks at the session", size)
	}
}
