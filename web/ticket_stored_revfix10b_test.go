package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevFix10bTicketLinkStoredBeforeTheFixStillLeadsToTheConsole: the fix
// of rev-web10's finding checks a ticket link only when it is saved
// (ticketProblem in POST /groups/note). A link to the console's own export
// saved before the upgrade (any http(s) link was taken then) stays in
// group_triage.ticket_url and the groups page still renders it as the
// group's ticket, a same-origin link (target=_blank): whoever opens "the
// ticket" runs the export under their own name, the effect the fix was for.
// Only the label was fixed for old rows (views.TicketLabel).
//
// Expected: the groups page does not link a stored ticket link that
// ticketProblem refuses (shows it as text, or says it was refused).
func TestRevFix10bTicketLinkStoredBeforeTheFixStillLeadsToTheConsole(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	viewer, _ := b.SignIn(t, "acme:viewer")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "rf10b-ticket-1", Error: "boom"})
	var fp string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT fingerprint FROM dead_letters WHERE id = $1`, id).Scan(&fp))

	// As POST /groups/note saved it before the fix.
	link := b.URL() + "/audit/export.jsonl?action=deadletter.download"
	_, err := b.Pool.Exec(t.Context(), `INSERT INTO group_triage (tenant, fingerprint, note, ticket_url, updated_by) VALUES ('acme', $1, 'see ticket', $2, 'oncall')`, fp, link)
	require.NoError(t, err)

	page := b.Do(t, viewer, http.MethodGet, "/groups?state=all", nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	a := page.Doc(t).Find(`[data-testid="group-ticket"]`)
	href, linked := a.Attr("href")
	assert.False(t, linked && href == link,
		"the groups page still links the stored ticket %q, the console's own export: whoever opens it exports under their name", href)
}
