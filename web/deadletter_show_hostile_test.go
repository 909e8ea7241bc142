package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
	"github.com/quarantine-console/quarantine/web"
)

// TestHostileDeadLetterPage: a hostile producer's dead letter (an error and
// a stack trace of a megabyte each, 10,000 headers, a binary payload of a
// megabyte: hostileLetter) is stored whole; its page shows a bounded start
// of each long value, says "showing X of Y" for each, and links a download
// of the whole value. Each download is the whole value byte for byte, as
// an attachment no browser sniffs; it needs the right to read the dead
// letter (the payload: to download it), like the page, and another tenant's
// is not found, like the page.
func TestHostileDeadLetterPage(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	l := hostileLetter("hostile-page")
	id := testfactory.DeadLetter(t, b.Pool, l)
	theirs := l
	theirs.Tenant, theirs.MsgID = "globex", "hostile-theirs"
	other := testfactory.DeadLetter(t, b.Pool, theirs)
	stored, err := b.Store.Get(context.Background(), id)
	require.NoError(t, err)
	headers, err := stored.Headers()
	require.NoError(t, err)
	require.Greater(t, len(headers), 10_000, "every header stored")
	oncall, _ := b.SignIn(t, "acme:oncall")
	page := fmt.Sprintf("/deadletters/%d", id)

	resp := b.Do(t, oncall, "GET", page, nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	t.Logf("page: %d bytes", len(resp.Body))
	assert.Less(t, len(resp.Body), 1<<20, "the page stays under a megabyte")
	d := resp.Doc(t)
	assertNothingExecutable(t, d, resp.Body)

	for _, c := range []struct{ what, whole string }{{"error", l.Error}, {"stack", l.Stack}} {
		shown := byID(d, "dl-"+c.what).Text()
		assert.True(t, strings.HasPrefix(c.whole, shown), "%s: the start of it, as text", c.what)
		assert.LessOrEqual(t, len(shown), dlq.PreviewTextMax, c.what)
		assert.Greater(t, len(shown), dlq.PreviewTextMax-4, c.what)
		assert.Equal(t, fmt.Sprintf("Showing the first %s of %s. Download the whole %s.", views.Bytes(int64(len(shown))),
			views.Bytes(int64(len(c.whole))), map[string]string{"error": "error", "stack": "stack trace"}[c.what]),
			text(byID(d, "dl-"+c.what+"-cut")), c.what)
		assert.Equal(t, fmt.Sprintf("%s/%s.txt", page, c.what), byID(d, "dl-"+c.what+"-download").AttrOr("href", ""))
	}

	rows := byID(d, "dl-header")
	assert.Equal(t, dlq.PreviewHeadersMax, rows.Length(), "the first headers only")
	assert.Equal(t, fmt.Sprintf("Showing the first %d of %d headers: %d more headers not shown. Download all %d headers (JSON).",
		dlq.PreviewHeadersMax, len(headers), len(headers)-dlq.PreviewHeadersMax, len(headers)), text(byID(d, "dl-headers-more")))
	assert.Equal(t, page+"/headers.json", byID(d, "dl-headers-download").AttrOr("href", ""))
	var errRow *goquery.Selection
	rows.Each(func(_ int, s *goquery.Selection) {
		if strings.TrimSpace(s.Find(".headers__name").Text()) == dlq.HeaderError {
			errRow = s
		}
	})
	require.NotNil(t, errRow, "the Dlq-Error header is among the first")
	value := errRow.Find(".headers__value bdi.ut").First().Text()
	assert.True(t, strings.HasPrefix(l.Error, value), "the start of its value")
	assert.LessOrEqual(t, len(value), dlq.PreviewHeaderTextMax)
	assert.Equal(t, "cut", errRow.Find(".headers__value .flag").Last().Text())

	assert.Equal(t, fmt.Sprintf("Showing the first %s of %s. Download the raw payload for all of it.",
		views.Bytes(dlq.PreviewPayloadMax), views.Bytes(int64(len(l.Payload)))), text(byID(d, "dl-truncated")))
	assert.Equal(t, views.HexDump(l.Payload[:dlq.PreviewPayloadMax]), byID(d, "dl-payload-body").Text(), "the start of the payload, as a hex dump")

	t.Run("DownloadsWhole", func(t *testing.T) {
		for path, want := range map[string]string{"/error.txt": l.Error, "/stack.txt": l.Stack, "/payload": string(l.Payload)} {
			got := b.Do(t, oncall, "GET", page+path, nil, nil)
			require.Equal(t, http.StatusOK, got.Status, path)
			assert.True(t, got.Body == want, "%s: the whole value, byte for byte (%d of %d bytes)", path, len(got.Body), len(want))
			assert.True(t, strings.HasPrefix(got.Header.Get("Content-Disposition"), "attachment; "), path)
			assert.Equal(t, "nosniff", got.Header.Get("X-Content-Type-Options"), path)
		}
		got := b.Do(t, oncall, "GET", page+"/headers.json", nil, nil)
		require.Equal(t, http.StatusOK, got.Status)
		assert.Equal(t, "text/plain; charset=UTF-8", got.Header.Get("Content-Type"))
		assert.Equal(t, fmt.Sprintf(`attachment; filename="deadletter-%d-headers.json"`, id), got.Header.Get("Content-Disposition"))
		assert.Equal(t, "nosniff", got.Header.Get("X-Content-Type-Options"))
		var all []dlq.HeaderValue
		require.NoError(t, json.Unmarshal([]byte(got.Body), &all))
		assert.Equal(t, headers, all, "every header whole, in order")
	})

	t.Run("OtherTenantNotFound", func(t *testing.T) {
		theirPage := fmt.Sprintf("/deadletters/%d", other)
		for _, path := range []string{"", "/error.txt", "/stack.txt", "/headers.json", "/payload"} {
			resp := b.Do(t, oncall, "GET", theirPage+path, nil, nil)
			assert.Equal(t, http.StatusNotFound, resp.Status, path)
			assert.NotContains(t, resp.Body, "refund failed", "%s: nothing of it leaks", path)
		}
	})

	t.Run("NeedsTheRightToRead", func(t *testing.T) {
		for _, r := range (&web.Server{}).Routes() {
			switch r.Path {
			case "/deadletters/:id/error.txt", "/deadletters/:id/stack.txt", "/deadletters/:id/headers.json":
				assert.Equal(t, web.Permission{Object: authz.ObjDeadLetter, Action: authz.ActRead}, r.Perm, r.Path)
				assert.Equal(t, web.ObjectTenant, r.Tenancy, r.Path)
			}
		}
		admin, _ := b.SignIn(t, "acme:admin") // no right on dead letters anywhere
		for _, path := range []string{"", "/error.txt", "/stack.txt", "/headers.json", "/payload"} {
			resp := b.Do(t, admin, "GET", page+path, nil, nil)
			assert.Equal(t, http.StatusForbidden, resp.Status, path)
			assert.NotContains(t, resp.Body, "refund failed", path)
		}
		viewer, _ := b.SignIn(t, "acme:viewer", "globex:admin") // reads acme's, downloads no payload
		for path, want := range map[string]int{"/error.txt": http.StatusOK, "/stack.txt": http.StatusOK, "/headers.json": http.StatusOK,
			"/payload": http.StatusForbidden} {
			assert.Equal(t, want, b.Do(t, viewer, "GET", page+path, nil, nil).Status, path)
		}
		for _, path := range []string{"", "/error.txt", "/stack.txt", "/headers.json"} {
			assert.Equal(t, http.StatusNotFound, b.Do(t, viewer, "GET", fmt.Sprintf("/deadletters/%d%s", other, path), nil, nil).Status,
				"globex's %s: no right to read there", path)
		}
	})
}

// hostileLetter is a dead letter as a hostile producer may send it: an
// error and a stack trace of a megabyte each ("<" and "&" that escape to
// four and five bytes), 10,000 headers and a binary payload of a megabyte.
// Ingest stores it whole, as it should.
func hostileLetter(msgID string) testfactory.Letter {
	hs := make(map[string][]string, 10_000)
	for i := range 10_000 {
		hs[fmt.Sprintf("X-Hostile-%05d", i)] = []string{strings.Repeat("<&>", 30)}
	}
	payload := make([]byte, 1<<20)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	return testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: msgID,
		Error:   "refund failed: " + strings.Repeat("<b>&amp;</b> ", 1<<20/13),
		Stack:   strings.Repeat("payments.(*Refunder).Refund(0xc000<&>)\n\t/srv/payments/refund.go:88\n", 1<<20/64),
		Headers: hs, Payload: payload}
}
