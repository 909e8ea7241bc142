package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestGetThatWritesOpenedFromOutsideTheConsole: a GET that writes which the
// browser says nothing started (Sec-Fetch-Site: none: typed in, a
// bookmark, or a link opened from a mail or chat application, which anyone
// may have sent) writes nothing; its page says why and offers to start it
// again from the console's own page, which then runs.
func TestGetThatWritesOpenedFromOutsideTheConsole(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, me := b.SignIn(t, "*:auditor")
	path := "/audit/export.jsonl?action=auth.login"
	mine := func() int { return b.AuditCount(t, "actor_subject = $1", me.Subject) }
	before := mine()

	resp := b.Do(t, c, http.MethodGet, path, nil,
		map[string]string{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate", "Accept": "text/html"})
	require.Equal(t, http.StatusForbidden, resp.Status)
	assert.Contains(t, resp.Body, "This link was opened from outside the console")
	assert.Equal(t, before, mine(), "nothing written, not even a denial")
	again := resp.Doc(t).Find(`[data-testid="start-again"]`).AttrOr("href", "")
	require.Equal(t, path, again, "Start it again: the same path and query")

	resp = b.Do(t, c, http.MethodGet, again, nil, map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate"})
	require.Equal(t, http.StatusOK, resp.Status)
	assert.Equal(t, 1, b.AuditCount(t, "action = 'audit.export' AND actor_subject = $1", me.Subject))
}
