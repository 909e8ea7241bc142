package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestDeadLetterShowBoundsTexts: a producer may send an error and a stack
// trace of megabytes and ids of kilobytes (2.6 MB of "<" in the error made
// a page of 10 MB, each "<" escaped). The page shows the first 64 KB of the
// error and of the stack trace, says how much more there is and offers
// each whole as a text download; a cut id is marked and has no copy
// button (it would copy an id that is not the message's). The download
// needs what the page needs, and another tenant's answers 404.
func TestDeadLetterShowBoundsTexts(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	errText := "boom " + strings.Repeat("<", 2_600_000)
	stack := strings.Repeat("main.handler()\n\t/srv/app/handler.go:42\n", 20_000) // 780 KB
	opID := "op-" + strings.Repeat("x", 5000)
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "long-texts",
		OperationID: opID, Error: errText, Stack: stack})
	short := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "short-texts"})
	c, _ := b.SignIn(t, "acme:viewer")

	resp := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	t.Logf("page: %d bytes", len(resp.Body))
	assert.Less(t, len(resp.Body), 1<<20, "the page stays under a megabyte")
	d := resp.Doc(t)
	assert.Equal(t, errText[:views.TextShownMax], byID(d, "dl-error").Text(), "the start of the error, as text")
	assert.Equal(t, stack[:views.TextShownMax], byID(d, "dl-stack").Text(), "the start of the stack trace")
	assert.Contains(t, byID(d, "dl-error-cut").Text(), "Showing the first 64.0 KB of 2.5 MB")
	assert.Contains(t, byID(d, "dl-stack-cut").Text(), "of 761.7 KB")
	assert.Equal(t, fmt.Sprintf("/deadletters/%d/error.txt", id), byID(d, "dl-error-download").AttrOr("href", ""))
	assert.Equal(t, fmt.Sprintf("/deadletters/%d/stack.txt", id), byID(d, "dl-stack-download").AttrOr("href", ""))
	assert.Equal(t, 1, byID(d, "dl-id-cut").Length(), "the operation id is marked cut")
	assert.NotContains(t, resp.Body, opID, "the whole operation id is not on the page")
	assert.NotContains(t, resp.Body, `data-copy="`+opID[:views.IDShownMax], "a cut id has no copy button")

	for which, want := range map[string]string{"error": errText, "stack": stack} {
		got := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d/%s.txt", id, which), nil, nil)
		require.Equal(t, http.StatusOK, got.Status, which)
		assert.True(t, got.Body == want, "the whole %s, byte for byte (%d of %d bytes)", which, len(got.Body), len(want))
		assert.Equal(t, "text/plain; charset=UTF-8", got.Header.Get("Content-Type"))
		assert.Equal(t, fmt.Sprintf(`attachment; filename="deadletter-%d-%s.txt"`, id, which), got.Header.Get("Content-Disposition"))
		assert.Equal(t, "nosniff", got.Header.Get("X-Content-Type-Options"))
	}

	t.Run("ShortTextsWhole", func(t *testing.T) {
		d := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", short), nil, nil).Doc(t)
		assert.Equal(t, "refund failed", byID(d, "dl-error").Text())
		assert.Zero(t, byID(d, "dl-error-cut").Length()+byID(d, "dl-stack-cut").Length()+byID(d, "dl-id-cut").Length(), "nothing cut, nothing said")
	})

	t.Run("OtherTenant", func(t *testing.T) {
		other, _ := b.SignIn(t, "globex:oncall")
		before := b.AuditCount(t, "action = 'authz.denied' AND object_type = 'dead_letter' AND object_id = $1", fmt.Sprint(id))
		for _, which := range []string{"error", "stack"} {
			resp := b.Do(t, other, "GET", fmt.Sprintf("/deadletters/%d/%s.txt", id, which), nil, nil)
			assert.Equal(t, http.StatusNotFound, resp.Status, which)
			assert.NotContains(t, resp.Body, "boom", "nothing of it leaks")
		}
		assert.Equal(t, before+2, b.AuditCount(t, "action = 'authz.denied' AND object_type = 'dead_letter' AND object_id = $1", fmt.Sprint(id)), "both attempts audited")
	})
}
