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
