package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall12GroupReplayOfHeldGroup: an on-call replays a whole
// error group from the groups page; a worker has not published it yet
// (or it waits for its approver). The groups page keeps offering
// "Replay 2 unresolved…" for the group, every dead letter of which is
// held by that open request: the click makes a draft of nothing ("0 to
// replay · 2 blocked", no submit). The dead letter's own page says
// "Nothing to do here: its status is replay requested"; the groups page
// should not offer what will be refused (or should count only what could
// go, and say the rest is being replayed).
func TestRevOncall12GroupReplayOfHeldGroup(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, oncallUser := b.SignIn(t, "acme:oncall")
	var ids []int64
	for i := range 2 {
		ids = append(ids, testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update",
			MsgID: fmt.Sprintf("held-group-%d", i), Error: "index shard 4 unavailable"}))
	}
	// The group's replay, requested (rebuildable: approved at once; no
	// worker runs in this console, as none has run yet at 3 am).
	req := testfactory.Request(t, b.Replays, oncallUser.Actor, ids, replay.SubmitInput{Reason: "shard 4 back"})
	require.NotEqual(t, replay.StatusDraft, req.Status)

	page := b.Do(t, oncall, "GET", "/groups", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	rows := page.Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, rows.Length())
	offer := offerOf(t, b, oncall, rows).Find(`[data-testid="group-replay"]`)
	if offer.Length() == 0 {
		return // not offered: nothing of it could go
	}
	action, _ := offer.Closest("form").Attr("action")
	text := strings.TrimSpace(offer.Text())
	resp := b.Do(t, oncall, "POST", strings.ReplaceAll(action, "&amp;", "&"), nil, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil)
	require.Equal(t, http.StatusOK, confirm.Status)
	d := confirm.Doc(t)
	assert.Equal(t, 1, d.Find(`[data-testid="replay-submit"]`).Length(),
		"the groups page offered %q for a group whose every dead letter request %d already holds; the click leads to: %s",
		text, req.ID, strings.Join(strings.Fields(d.Find(`.page-sub`).First().Text()), " "))
}

// TestRevOncall12GroupReplayCountsOtherTenants: an on-call of acme who
// may only read globex sees an error group spanning both tenants offered
// as "Replay 4 unresolved…"; the click leaves half of it out, blocked by
// "you may not request rebuildable replays in tenant globex". The groups
// page knows the person's roles: it should offer (and count) the replay of
// what they may replay, i.e. the group in their replay tenants.
func TestRevOncall12GroupReplayCountsOtherTenants(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall", "globex:viewer")
	for i := range 2 {
		for _, tenant := range []string{"acme", "globex"} {
			testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update",
				MsgID: fmt.Sprintf("mixed-%s-%d", tenant, i), Error: "index shard 4 unavailable"})
		}
	}
	rows := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, rows.Length())
	offer := offerOf(t, b, c, rows).Find(`[data-testid="group-replay"]`)
	require.Equal(t, 1, offer.Length(), "acme's half may be replayed")
	action, _ := offer.Closest("form").Attr("action")
	resp := b.Do(t, c, "POST", action, nil, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	d := b.Do(t, c, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
	assert.Zero(t, d.Find(`[data-check="may-request"]`).Length(),
		"the groups page offered %q; the click leads to: %s", strings.TrimSpace(offer.Text()),
		strings.Join(strings.Fields(d.Find(`[data-testid="replay-summary"]`).Text()), " "))
}

// TestRevOncall12GroupReplayOfUnreplayableGroup: an error group of
// email.send dead letters (same_operation) whose producer sent no
// operation id: the dead letter's own page offers no replay ("cannot
// guarantee idempotency without an operation id"), yet the groups page
// offers "Replay 3 unresolved…", which makes a draft of nothing.
func TestRevOncall12GroupReplayOfUnreplayableGroup(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	var ids []int64
	for i := range 3 {
		ids = append(ids, testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "email.send",
			MsgID: fmt.Sprintf("no-op-%d", i), Error: "smtp 451 try again later"}))
	}
	dl := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", ids[0]), nil, nil).Doc(t)
	require.Zero(t, dl.Find(`[data-testid="deadletter-replay"]`).Length(), "its own page offers no replay")

	rows := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, rows.Length())
	offer := offerOf(t, b, c, rows).Find(`[data-testid="group-replay"]`)
	if offer.Length() == 0 {
		return
	}
	action, _ := offer.Closest("form").Attr("action")
	resp := b.Do(t, c, "POST", action, nil, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	d := b.Do(t, c, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
	assert.Equal(t, 1, d.Find(`[data-testid="replay-submit"]`).Length(),
		"the groups page offered %q; the click leads to: %s", strings.TrimSpace(offer.Text()),
		strings.Join(strings.Fields(d.Find(`[data-testid="replay-summary"]`).Text()), " "))
}
