package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevEdit31BrowserEditKeepsThePayloadsLineBreaks: a browser sends a
// textarea's line breaks as CRLF whatever they were, and its HTML parser
// drops a line break just after <textarea>. An edit made in the browser
// of a payload of LF lines was stored, approved and published with CRLF
// lines nobody chose (a JSON diff does not show it), and a payload's
// first blank line was lost. The form now shows the payload whole and
// says how it breaks its lines; the edit keeps them so: a payload of LF
// lines edited is stored with LF lines, one of CRLF lines with CRLF.
func TestRevEdit31BrowserEditKeepsThePayloadsLineBreaks(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	for _, tc := range []struct {
		name, payload, typed, stored string
		mixed                        bool
	}{
		// As a browser sends it: every line break CRLF.
		{"LF", "\na=1\nb=2\n", "\r\na=3\r\nb=2\r\n", "\na=3\nb=2\n", false},
		{"CRLF", "a=1\r\nb=2\r\n", "a=3\r\nb=2\r\n", "a=3\r\nb=2\r\n", false},
		// Both: the browser cannot keep them; the form says they become LF.
		{"Mixed", "a=1\r\nb=2\n", "a=3\r\nb=2\r\n", "a=3\nb=2\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "accounts.permission_grant",
				MsgID: "rev31-breaks-" + tc.name, Error: "boom", Payload: []byte(tc.payload),
				Headers: map[string][]string{dlq.HeaderPrincipal: {"user:31"}}})
			reqPath := requestReplay(t, b, oncall, id)
			form := b.Do(t, oncall, "GET", reqPath, nil, nil).Doc(t).Find(`[data-testid="payload-edit-form"]`)
			require.Equal(t, 1, form.Length())
			// An HTML parser reads each CRLF as LF, as a browser shows it.
			assert.Equal(t, strings.ReplaceAll(tc.payload, "\r\n", "\n"), form.Find(`[data-testid="payload-edit"]`).Text(),
				"the textarea holds the payload whole")
			assert.Equal(t, tc.mixed, form.Find(`[data-testid="payload-edit-mixed-breaks"]`).Length() == 1, "the form says when it cannot keep them")
			sent := url.Values{}
			form.Find(`input[type="hidden"]`).Each(func(_ int, s *goquery.Selection) { sent.Add(s.AttrOr("name", ""), s.AttrOr("value", "")) })
			sent.Set("payload", tc.typed)
			sent.Set("reason", "a must be 3")
			resp := b.Do(t, oncall, "POST", form.AttrOr("action", ""), sent, nil)
			require.Equal(t, http.StatusSeeOther, resp.Status, "%.300s", resp.Body)
			var stored []byte
			require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT payload FROM replay_items WHERE dead_letter_id = $1`, id).Scan(&stored))
			assert.Equal(t, fmt.Sprintf("%q", tc.stored), fmt.Sprintf("%q", stored), "stored with the payload's own line breaks")
			if tc.mixed {
				return
			}
			// Typed back as received (the browser's line breaks again), it
			// is the payload received: the edit is undone.
			again := b.Do(t, oncall, "GET", reqPath, nil, nil).Doc(t).Find(`[data-testid="payload-edit-form"]`)
			back := url.Values{}
			again.Find(`input[type="hidden"]`).Each(func(_ int, s *goquery.Selection) { back.Add(s.AttrOr("name", ""), s.AttrOr("value", "")) })
			back.Set("payload", strings.ReplaceAll(strings.ReplaceAll(tc.payload, "\r\n", "\n"), "\n", "\r\n"))
			back.Set("reason", "a was right")
			resp = b.Do(t, oncall, "POST", again.AttrOr("action", ""), back, nil)
			require.Equal(t, http.StatusSeeOther, resp.Status, "%.300s", resp.Body)
			var edited bool
			require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT payload IS NOT NULL FROM replay_items WHERE dead_letter_id = $1`, id).Scan(&edited))
			assert.False(t, edited, "the payload received typed back undoes the edit")
		})
	}
}
