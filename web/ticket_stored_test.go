package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestStoredTicketLinkJudgedWhenShown: a ticket link saved before a rule
// it breaks is shown as text with why it is not linked, on the groups page
// and on the group's panel; a good one stays a link.
func TestStoredTicketLinkJudgedWhenShown(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	viewer, _ := b.SignIn(t, "acme:viewer")
	store := func(t *testing.T, msgID, errText, link string) string {
		id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: msgID, Error: errText})
		var fp string
		require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT fingerprint FROM dead_letters WHERE id = $1`, id).Scan(&fp))
		_, err := b.Pool.Exec(t.Context(), `INSERT INTO group_triage (tenant, fingerprint, note, ticket_url, updated_by) VALUES ('acme', $1, 'see ticket', $2, 'oncall')`, fp, link)
		require.NoError(t, err)
		return fp
	}
	refused := store(t, "ticket-shown-1", "connection refused", "http://0x7f.0.0.1/audit/export.jsonl")
	good := store(t, "ticket-shown-2", "schema mismatch", "https://tickets.example.com/browse/OPS-1")

	t.Run("GroupsPage", func(t *testing.T) {
		page := b.Do(t, viewer, http.MethodGet, "/groups?state=all", nil, nil)
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		doc := page.Doc(t)
		bad := doc.Find(`tr:has([href*="` + refused + `"]) [data-testid="group-ticket"]`)
		require.Equal(t, 1, bad.Length(), "the refused link's group shows its ticket")
		assert.False(t, bad.Is("a"), "a refused ticket link is not a link")
		assert.Equal(t, "0x7f.0.0.1/audit/export.jsonl", bad.Text())
		assert.Contains(t, doc.Find(`tr:has([href*="`+refused+`"]) [data-testid="group-ticket-refused"]`).Text(), "not linked: Ticket links must name their host")
		ok := doc.Find(`tr:has([href*="` + good + `"]) a[data-testid="group-ticket"]`)
		assert.Equal(t, "https://tickets.example.com/browse/OPS-1", ok.AttrOr("href", ""), "a good ticket link is linked")
	})
	t.Run("GroupPanel", func(t *testing.T) {
		page := b.Do(t, viewer, http.MethodGet, "/deadletters?group="+refused, nil, nil)
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		panel := page.Doc(t).Find(`[data-testid="group-panel"]`)
		assert.Equal(t, 0, panel.Find(`a[data-testid="group-ticket"]`).Length(), "the panel does not link a refused ticket")
		assert.Contains(t, panel.Find(`[data-testid="group-ticket-refused"]`).Text(), "not linked")
	})
}
