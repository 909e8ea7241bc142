package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall11GroupReplayOfNothingNotOffered: the groups page with "All
// groups" (or "Snoozed") lists groups whose dead letters are all resolved
// or discarded. Each row's Actions menu still offers "Replay 0
// unresolved…"; pressed, it posts /replay/filter?group=…&status=unresolved
// and lands on an error page ("The filter selects nothing.", 422) instead
// of a confirmation. The same menu's "Mark resolved…" and "Discard…" of
// that group go back to the list with a message; the replay is the one
// that breaks. A tired on-call who looks at "All groups" to find last
// night's incident presses the group's replay and gets an error.
//
// Severity: low. Expected: a group with nothing unresolved is not offered
// as a replay (or the menu says why), as the 0 already tells.
func TestRevOncall11GroupReplayOfNothingNotOffered(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "rvo11-closed-group", nil)

	// Resolve it through its page, confirmed.
	resp := b.Do(t, oncall, "POST", "/deadletters/"+strconv.FormatInt(id, 10)+"/resolve",
		url.Values{"reason": {"reindexed by hand"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	groups := b.Do(t, oncall, "GET", "/groups?state=all", nil, nil)
	require.Equal(t, http.StatusOK, groups.Status, groups.Body)
	row := groups.Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, row.Length(), "All groups lists the resolved group")
	replay := offerOf(t, b, oncall, row).Find(`[data-testid="group-replay"]`)
	if replay.Length() == 0 {
		return // not offered: fixed
	}
	label := strings.Join(strings.Fields(replay.Text()), " ")
	action, ok := replay.Closest("form").Attr("action")
	require.True(t, ok)
	out := b.Do(t, oncall, "POST", action, url.Values{}, nil)
	assert.Equal(t, http.StatusSeeOther, out.Status,
		"the group menu offers %q for a group with nothing unresolved; pressed, it answers %d: %s",
		label, out.Status, textOf(out.Doc(t), `main`))
}
