package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevFix10bTicketLinkToConsoleAsIPv4NumberIsSaved: through the route,
// an on-call saves the console's own export as a group's ticket by
// spelling the console's address 127.0.0.1 as a browser also reads it,
// 0x7f.0.0.1 (or 2130706433): ticketProblem compares host strings, the
// link is saved (303) and the groups page links it, a same-origin link in
// a browser (WHATWG URL parsing canonicalises IPv4 number forms), so the
// export runs under whoever opens "the ticket". With a host name the same
// is done with full-width letters or an ideographic full stop (IDNA
// mapping): TestRevFix10bTicketLinkToConsoleByAnotherSpelling.
func TestRevFix10bTicketLinkToConsoleAsIPv4NumberIsSaved(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "rf10b-ticket-2", Error: "boom"})
	var fp string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT fingerprint FROM dead_letters WHERE id = $1`, id).Scan(&fp))
	u, err := url.Parse(b.URL())
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", u.Hostname(), "precondition: the console is served on 127.0.0.1")

	link := "http://0x7f.0.0.1:" + u.Port() + "/audit/export.jsonl?action=deadletter.download"
	form := url.Values{"tenant": {"acme"}, "group": {fp}, "note": {"tracked in the ticket"}, "ticket": {link}, "return_to": {"/groups"}}
	resp := b.Do(t, oncall, http.MethodPost, "/groups/note", form, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status,
		"a ticket link to the console's own export (127.0.0.1 spelled 0x7f.0.0.1) is saved: %s", strings.TrimSpace(resp.Body))
}
