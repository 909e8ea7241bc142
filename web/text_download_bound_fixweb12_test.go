package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/web"
)

// TestFixWeb12EveryFileSentIsBounded walks the route table's GETs with an
// object for each path: every route that answers with a file (an
// attachment) declares a download kind, so limitDownload bounds it, and
// every route that declares one answers with a file. A download that
// writes nothing (a dead letter's error, headers, stack trace) is bounded
// as a download and is not marked as writing.
func TestFixWeb12EveryFileSentIsBounded(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	all, fill, _ := routeObjects(t, b)
	files := 0
	for _, r := range (&web.Server{}).Routes() {
		if r.Method != http.MethodGet || strings.HasPrefix(r.Path, "/auth/") {
			continue
		}
		resp := b.Do(t, all, r.Method, fill(r.Path), nil, map[string]string{"Sec-Fetch-Site": "same-origin"})
		file := strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment")
		assert.Equal(t, file, r.Download != web.NoDownload,
			"%s %s answered %d (attachment: %v): a route that sends a file declares its download kind, and only such a route",
			r.Method, r.Path, resp.Status, file)
		if file {
			files++
		}
	}
	assert.Equal(t, 7, files, "the exports (2), the payloads (2) and the dead letter texts (3)")

	for _, r := range (&web.Server{}).Routes() {
		if strings.HasSuffix(r.Path, ".txt") || strings.HasSuffix(r.Path, "/headers.json") {
			assert.False(t, r.Writes, "%s: reading a dead letter's text writes nothing", r.Path)
			assert.Equal(t, web.DownloadText, r.Download, "%s: held whole as a payload is, bounded as a text download", r.Path)
		}
	}
}

// TestFixWeb12TextsShareOneBound: a dead letter's three texts are one
// kind of download: with two of a person's stack trace downloads stalled,
// the error and the headers are refused (429) too, while a payload
// download (a bound of its own) and the page still open.
func TestFixWeb12TextsShareOneBound(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	big := strings.Repeat("at com.example.Handler.process(Handler.java:42)\n", 6<<20/48)
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Stack: big, Payload: []byte(big)})
	client, _ := b.SignIn(t, "acme:oncall")
	cookie := b.SessionCookie(t, client)
	stack := fmt.Sprintf("/deadletters/%d/stack.txt", id)
	require.Equal(t, http.StatusOK, stalledGet(t, b.URL(), stack, cookie))
	require.Equal(t, http.StatusOK, stalledGet(t, b.URL(), stack, cookie))
	for _, text := range []string{"error.txt", "headers.json"} {
		resp := b.Do(t, client, http.MethodGet, fmt.Sprintf("/deadletters/%d/%s", id, text), nil, nil)
		assert.Equal(t, http.StatusTooManyRequests, resp.Status, text)
		assert.Equal(t, "30", resp.Header.Get("Retry-After"), text)
	}
	assert.Equal(t, http.StatusOK, stalledGet(t, b.URL(), fmt.Sprintf("/deadletters/%d/payload", id), cookie))
	assert.Equal(t, http.StatusOK, b.Do(t, client, http.MethodGet, fmt.Sprintf("/deadletters/%d", id), nil, nil).Status)
}
