package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevOncall20ReplayLeftOutLostToSecondTab: this round's fix names, on
// the confirm page of "Replay all matching", what the filter selects in a
// tenant where the person may only read ("2 dead letters in globex, where
// you may not request replays"). It keeps that in the session under one
// key, for the person's last batch only (keepReplayLeftOut: "in place of
// what an earlier batch left out"). An on-call who starts "Replay all
// matching" for one poison type in one tab, and for another type in a
// second tab, then goes back to the first tab (or reloads it, or comes
// back to it from a payload edit) and confirms, is shown the first batch
// with nothing said of globex: the silent drop the fix was for, back.
//
// Expected: what a batch left out is named on that batch's page however
// many batches the person started since (kept by batch, or drafted with
// it), as a checkbox selection's confirmation names it every time.
func TestRevOncall20ReplayLeftOutLostToSecondTab(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:viewer")
	var letters []testfactory.Letter
	for i, l := range []struct{ tenant, typ string }{
		{"acme", "search.index_update"}, {"acme", "search.index_update"}, {"globex", "search.index_update"}, {"globex", "search.index_update"},
		{"acme", "search.reindex"}, {"globex", "search.reindex"},
	} {
		letters = append(letters, testfactory.Letter{Tenant: l.tenant, ItemType: l.typ, MsgID: fmt.Sprintf("rev20h-tab-%d", i),
			Error: "index shard 20h-tab unavailable " + l.typ})
	}
	testfactory.DeadLetters(t, b.Pool, letters...)
	batch := func(typ string) string {
		t.Helper()
		var action string
		wait.Until(t, "all matching offered for "+typ, 30*time.Second, func() bool {
			d := b.Do(t, oncall, "GET", "/deadletters?type="+typ, nil, nil).Doc(t)
			action = d.Find(`form[action^="/replay/filter"]`).AttrOr("action", "")
			return action != "" && d.Find(`[data-testid="deadletter-row"]`).Length() > 0
		})
		resp := b.Do(t, oncall, "POST", action, nil, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		return resp.Header.Get("Location")
	}
	leftOut := func(path string) string {
		t.Helper()
		resp := b.Do(t, oncall, "GET", path, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		return strings.Join(strings.Fields(resp.Doc(t).Find(`[data-testid="confirm-left-out"]`).Text()), " ")
	}

	first := batch("search.index_update") // tab 1
	require.Contains(t, leftOut(first), "in globex", "the first batch names globex's two at first")
	second := batch("search.reindex") // tab 2
	require.NotEqual(t, first, second)
	require.Contains(t, leftOut(second), "in globex", "the second batch names globex's one")

	assert.Contains(t, leftOut(first), "in globex",
		"back in the first tab, its batch says nothing of the 2 dead letters in globex it leaves out")
}

// TestRevOncall20ReplayLeftOutMiscountsTheFilter: the list says "All 5
// matching" (three in acme, one of them already discarded, and two in
// globex, where the on-call may only read). "Discard all matching…" says
// "Left out: 3 of the 5 matching" and names each (1 already discarded, 2
// in globex). "Replay all matching…" says "Left out: 2 of the 4
// matching": replayLeftOut counts Of as what it drafted plus the read-only
// tenants' replayable ones, so the discarded one in acme is neither
// drafted nor left out, and the number the page gives for the filter
// contradicts the list that offered it (and the discard's page).
//
// Expected: the replay's confirmation counts what the filter selects as
// the list does (5), and names what it leaves out and why (as the close's
// filterLeftOut does: "1 dead letter already discarded"), or does not
// claim a total.
func TestRevOncall20ReplayLeftOutMiscountsTheFilter(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:viewer")
	var letters []testfactory.Letter
	for i, tenant := range []string{"acme", "acme", "acme", "globex", "globex"} {
		letters = append(letters, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update", MsgID: fmt.Sprintf("rev20h-of-%d", i),
			Error: "index shard 20h-of unavailable"})
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	testfactory.SetStatus(t, b.Pool, dlq.StatusDiscarded, ids[2])
	var action, matching string
	wait.Until(t, "the list with all matching", 30*time.Second, func() bool {
		d := b.Do(t, oncall, "GET", "/deadletters?type=search.index_update", nil, nil).Doc(t)
		action, matching = d.Find(`form[action^="/replay/filter"]`).AttrOr("action", ""), textOf(d, `[data-testid="bulk-matching"]`)
		return action != "" && matching == "5"
	})
	resp := b.Do(t, oncall, "POST", action, nil, nil)
	for resp.Status == http.StatusSeeOther {
		resp = b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil)
	}
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	title := textOf(resp.Doc(t), `[data-testid="confirm-left-out"] .alert__title`)
	assert.Contains(t, title, "of the 5 matching",
		"the list offered 'All 5 matching'; the replay's confirmation says %q (the discarded one in acme is in neither count)", title)
}
