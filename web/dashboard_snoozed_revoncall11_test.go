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

// TestRevOncall11DashboardSnoozedIsNotDealtWith: the dashboard's "Top error
// groups" leaves snoozed groups out (dlq.GroupFilter's default), and when
// none is left it says "No unresolved error groups — Everything that
// arrived has been dealt with." (views/dashboard.templ:159). An on-call who
// snoozed the one noisy group at 3 a.m. (4 hours, from its panel) opens
// the dashboard at 3:05: the Unresolved tile says 2, and the card under it
// says everything was dealt with. Nothing was: the two dead letters wait
// in quarantine, and the snooze only hides the group.
//
// Severity: medium (the one sentence that tells a tired person they may
// stop looking is false). Expected: with unresolved dead letters in
// snoozed groups, the card says so (how many groups are snoozed, a link
// to Groups → Snoozed), never "dealt with".
func TestRevOncall11DashboardSnoozedIsNotDealtWith(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "rvo11-snoozed-1", nil)
	seed(t, b, "acme", "search.index_update", "rvo11-snoozed-2", nil)

	groups := b.Do(t, oncall, "GET", "/groups", nil, nil)
	require.Equal(t, http.StatusOK, groups.Status, groups.Body)
	fp, ok := groups.Doc(t).Find(`[data-testid="group-row"]`).First().Attr("data-fingerprint")
	require.True(t, ok, "the group is listed")

	resp := b.Do(t, oncall, "POST", "/groups/snooze", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {"4h"},
		"return_to": {"/deadletters?group=" + fp}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	dash := b.Do(t, oncall, "GET", "/", nil, nil)
	require.Equal(t, http.StatusOK, dash.Status, dash.Body)
	d := dash.Doc(t)
	unresolved := strings.TrimSpace(d.Find(`[data-testid="kpi-unresolved"] .kpi__value`).Text())
	require.Equal(t, "2", unresolved, "the tile counts the snoozed group's dead letters")
	card := d.Find(`section[aria-labelledby="h-groups"]`)
	require.Equal(t, 1, card.Length())
	text := strings.Join(strings.Fields(card.Text()), " ")
	assert.NotContains(t, text, "dealt with",
		"Unresolved says %s, and the top groups card says: %q", unresolved, text)
}
