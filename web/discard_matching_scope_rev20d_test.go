package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall20DiscardAllMatchingDropsReadOnlyTenantsSilently: an on-call
// of acme who may also read globex (viewer there) filters the dead letter
// list by item type: "All 4 matching", two in each tenant, and "Discard
// all matching…" is offered. The confirmation reads "Discard 2 dead
// letters?", its lead "These are the open dead letters the filter selects
// now", and lists acme's two. Nothing says that the filter selects two
// more, in globex, which this discard leaves out because the on-call may
// not discard there (closeFilter resolves the filter over the tenants
// where the person may discard, and filterLeftOut only accounts for
// dead letters left out by status or by a replay request: round 10's fix
// did not cover this sibling). The tired on-call confirms and believes the
// poison type is closed everywhere; globex's two stay quarantined.
//
// Expected: as for those left out by status or request, the confirmation
// says what of the filter it leaves out and why (here: in globex, where
// you may not discard), or the button does not promise "all matching".
func TestRevOncall20DiscardAllMatchingDropsReadOnlyTenantsSilently(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:viewer")
	var letters []testfactory.Letter
	for i, tenant := range []string{"acme", "acme", "globex", "globex"} {
		letters = append(letters, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update", MsgID: fmt.Sprintf("rev20d-scope-%d", i),
			Error: "index shard 20d-scope unavailable"})
	}
	testfactory.DeadLetters(t, b.Pool, letters...)

	list := b.Do(t, oncall, "GET", "/deadletters?type=search.index_update", nil, nil).Doc(t)
	require.Equal(t, 4, list.Find(`[data-testid="deadletter-row"]`).Length(), "the list shows the 4")
	require.Equal(t, "4", textOf(list, `[data-testid="bulk-matching"]`), "the list says all 4 match")
	action, ok := list.Find(`form[action^="/deadletters/discard/filter"]`).Attr("action")
	require.True(t, ok, "Discard all matching… is offered")

	resp := b.Do(t, oncall, "POST", action, nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	require.Equal(t, 2, d.Find(`[data-testid="confirm-item"]`).Length(), "acme's two can be discarded")
	page := strings.Join(strings.Fields(d.Find("main").Text()), " ")
	assert.Contains(t, page, "globex",
		"'Discard all matching' (the list: 4 matching) confirms 2 and says nothing of the 2 in globex it leaves out: %q", page)
}

// TestRevOncall20ReplayAllMatchingDropsReadOnlyTenantsSilently: the same
// list ("All 4 matching", two in acme where the on-call may request
// replays, two in globex where they may only read), "Replay all
// matching…": what the replay's confirmation shows of the two in globex.
func TestRevOncall20ReplayAllMatchingDropsReadOnlyTenantsSilently(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:viewer")
	var letters []testfactory.Letter
	for i, tenant := range []string{"acme", "acme", "globex", "globex"} {
		letters = append(letters, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update", MsgID: fmt.Sprintf("rev20d-rscope-%d", i),
			Error: "index shard 20d-rscope unavailable"})
	}
	testfactory.DeadLetters(t, b.Pool, letters...)
	list := b.Do(t, oncall, "GET", "/deadletters?type=search.index_update", nil, nil).Doc(t)
	require.Equal(t, "4", textOf(list, `[data-testid="bulk-matching"]`), "the list says all 4 match")
	action, ok := list.Find(`form[action^="/replay/filter"]`).Attr("action")
	require.True(t, ok, "Replay all matching… is offered")
	resp := b.Do(t, oncall, "POST", action, nil, nil)
	for resp.Status == http.StatusSeeOther {
		resp = b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil)
	}
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	page := strings.Join(strings.Fields(resp.Doc(t).Find("main").Text()), " ")
	assert.Contains(t, page, "globex",
		"'Replay all matching' (the list: 4 matching) says nothing of the 2 in globex it leaves out: %q", page)
}
