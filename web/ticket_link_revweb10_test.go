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

// TestRevWeb10TicketLinkLabelHidesItsHost: an error group's ticket link
// (POST /groups/note, any on-call with the triage right) is shown on the
// groups page as a label, views.TicketLabel: "its host and path, without
// the scheme, cut to 48 characters". It is the link text with "https://"
// trimmed, so a link with userinfo reads as another host: the link
// https://tickets.example.com:OPS-4711-...@evil.example/ is accepted
// (validTicketURL: http(s) with a host, and its host is evil.example),
// and its label starts "tickets.example.com:OPS-4711-" and is cut long
// before "@evil.example": the colleague who follows "the ticket" is sent
// to a host the page never names. The page says where a link goes; here
// it names a host the link does not go to.
//
// Severity: low (link spoofing by a person with the triage right). Expected:
// a ticket link with userinfo is refused (422 at the field), or its label
// names the host it goes to.
func TestRevWeb10TicketLinkLabelHidesItsHost(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	viewer, _ := b.SignIn(t, "acme:viewer")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "rw10-ticket-1", Error: "boom"})
	var fp string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT fingerprint FROM dead_letters WHERE id = $1`, id).Scan(&fp))

	link := "https://tickets.example.com:OPS-4711-" + strings.Repeat("x", 40) + "@evil.example/browse/OPS-4711"
	u, err := url.Parse(link)
	require.NoError(t, err)
	require.Equal(t, "evil.example", u.Host, "precondition: the link goes to evil.example")

	form := url.Values{"tenant": {"acme"}, "group": {fp}, "note": {"see the ticket"}, "ticket": {link}, "return_to": {"/groups"}}
	resp := b.Do(t, oncall, http.MethodPost, "/groups/note", form, nil)
	if resp.Status == http.StatusUnprocessableEntity {
		return // refused: a ticket link names its host plainly
	}
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	page := b.Do(t, viewer, http.MethodGet, "/groups?state=all", nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	a := page.Doc(t).Find(`[data-testid="group-ticket"]`)
	require.Equal(t, 1, a.Length(), "the group's ticket link is shown")
	href, _ := a.Attr("href")
	require.Equal(t, link, href, "the link goes where it was saved to go")
	label := a.Text()
	t.Logf("label %q for a link to host %q", label, u.Host)
	assert.Contains(t, label, "evil.example",
		"the ticket link's label names tickets.example.com, a host it does not go to, and hides evil.example, the host it does")
}

// TestRevWeb10TicketLinkStartsAnExportUnderWhoeverFollowsIt: a GET that
// writes an audit row under the person (the audit exports, both payload
// downloads) is refused when another site started it (Route.writes,
// fetchmeta.go), because "any page an operator opens" could otherwise
// "make the log say they did it". An error group's ticket link is such a
// link, stored on the console itself: validTicketURL takes any http(s)
// URL, the console's own export among them. Anyone with the triage right
// in a tenant saves http://<console>/audit/export.jsonl?... as the
// group's ticket; an auditor who opens "the ticket" from the groups page
// follows a same-origin link (Sec-Fetch-Site: same-origin), so the export
// runs, and the log records an audit.export (and a signed checkpoint)
// under the auditor, who only opened a ticket. A payload download link
// writes a deadletter.download row under whoever follows it the same way.
//
// Severity: low. Expected: a ticket link to the console itself is refused
// (422 at the ticket field): a ticket lives elsewhere.
func TestRevWeb10TicketLinkStartsAnExportUnderWhoeverFollowsIt(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	auditor, aud := b.SignIn(t, "acme:auditor")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "rw10-ticket-2", Error: "boom"})
	var fp string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT fingerprint FROM dead_letters WHERE id = $1`, id).Scan(&fp))

	link := b.URL() + "/audit/export.jsonl?action=deadletter.download"
	form := url.Values{"tenant": {"acme"}, "group": {fp}, "note": {"tracked in the ticket"}, "ticket": {link}, "return_to": {"/groups"}}
	resp := b.Do(t, oncall, http.MethodPost, "/groups/note", form, nil)
	if resp.Status != http.StatusUnprocessableEntity {
		// Show what the link does: the auditor's click on "the ticket".
		page := b.Do(t, auditor, http.MethodGet, "/groups?state=all", nil, nil)
		href, _ := page.Doc(t).Find(`[data-testid="group-ticket"]`).Attr("href")
		require.Equal(t, link, href, "the groups page links the ticket")
		got := b.Do(t, auditor, http.MethodGet, strings.TrimPrefix(href, b.URL()), nil,
			map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate"})
		t.Logf("following the ticket link: %d; audit.export rows under the auditor: %d", got.Status,
			b.AuditCount(t, "action = 'audit.export' AND actor_subject = $1", aud.Subject))
	}
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status,
		"a ticket link to the console's own export is saved: whoever opens the group's ticket exports the audit log under their own name")
}
