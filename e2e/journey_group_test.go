package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestGroupActionsJourney: six search-index updates fail with the same
// error and make a new error group. From the groups page the on-call
// replays the whole group: the menu says how many, the confirmation page
// shows the frozen set; a seventh arrives before the on-call submits and
// is not included (the replay publishes exactly the six, the late one
// stays quarantined). The on-call then snoozes the group until it grows by
// two, gives it an owner and a ticket: it leaves the groups page (and is
// listed under "Snoozed"), stays away when one more arrives, and comes
// back with the second.
func TestGroupActionsJourney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, js := newReplayStack(t, stackConfig{})
	run := randomHex(4)
	spec := func(i int) deadLetterSpec {
		return deadLetterSpec{Tenant: "acme", ItemType: "search.index_update", OriginalSubject: "app.acme.search.index_update",
			MsgID: fmt.Sprintf("shard-%s-%d", run, i), Payload: fmt.Appendf(nil, `{"doc":"sku-%d"}`, i),
			Err: "index products: shard 7 unavailable", Class: dlq.ClassTransient, Stack: "indexer.Apply\n\t/srv/indexer/apply.go:41"}
	}
	arrive := func(i int) int64 {
		t.Helper()
		publishDeadLetter(t, ctx, js, spec(i))
		return waitDeadLetterID(t, s.DB, spec(i).MsgID, s.Console.proc)
	}
	var group []int64
	for i := range 6 {
		group = append(group, arrive(i))
	}
	publishDeadLetter(t, ctx, js, deadLetterSpec{Tenant: "acme", ItemType: "search.index_update", OriginalSubject: "app.acme.search.index_update",
		MsgID: "other-" + run, Err: "index products: mapping conflict", Class: dlq.ClassPermanent})
	waitDeadLetterID(t, s.DB, "other-"+run, s.Console.proc)
	var fp string
	require.NoError(t, s.DB.QueryRow(ctx, `SELECT fingerprint FROM dead_letters WHERE id = $1`, group[0]).Scan(&fp))
	row := `[data-testid="group-row"][data-fingerprint="` + fp + `"]`

	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	// The groups page counts from the folded counters, which follow new
	// dead letters and status changes within moments, and nothing on it
	// refreshes by itself: it is opened again until the group counts want.
	waitUnresolved := func(what, want string) {
		t.Helper()
		err := wait.Poll(2*time.Minute, 500*time.Millisecond, func() error {
			oncall.Open("/groups")
			oncall.WaitUntil("the groups page", `document.querySelector('[data-testid="group-count"]')`)
			if !oncall.Exists(row+` [data-testid="group-unresolved"]`) || oncall.Text(row+` [data-testid="group-unresolved"]`) != want {
				return wait.ErrNotYet
			}
			return nil
		})
		require.NoError(t, err, "%s: the group counts %s unresolved", what, want)
	}
	waitUnresolved("the group on the groups page", "6")
	assert.True(t, oncall.Exists(row+` [data-testid="group-new"]`), "a group first seen today is marked new")
	oncall.Screenshots("groups")

	// Replay the group: the menu counts it, the confirmation page freezes it.
	// Opening the menu fetches its replay offer, judged then (the page itself
	// judges nothing).
	oncall.Click(row + ` [data-testid="group-menu"] summary`)
	oncall.WaitUntil("the group's replay offer", `document.querySelector('`+row+` [data-testid="group-replay"]')`)
	assert.Equal(t, "Replay 6 that can go…", oncall.Text(row+` [data-testid="group-replay"]`))
	oncall.ClickLoads(row+` [data-testid="group-replay"]`, "the replay confirm page", `document.querySelector('[data-testid="replay-confirm-form"]')`)
	assert.Contains(t, oncall.Text(testID("replay-summary")), "6 to replay")
	late := arrive(6) // the group grows while the on-call reads the page
	oncall.Fill(testID("replay-reason"), "shard 7 is back (e2e "+run+")")
	oncall.ClickLoads(testID("replay-submit"), "the replay request page", replayRequestPage)
	reqID, err := strconv.ParseInt(replayRequestPath.FindStringSubmatch(oncall.Location())[1], 10, 64)
	require.NoError(t, err)
	oncall.waitReplayStatus(reqID, "done")
	var items []int64
	rows, err := s.DB.Query(ctx, `SELECT dead_letter_id FROM replay_items WHERE request_id = $1 ORDER BY dead_letter_id`, reqID)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		items = append(items, id)
	}
	require.NoError(t, rows.Err())
	assert.ElementsMatch(t, group, items, "the frozen set: the six, not the late arrival")
	for i := range 6 {
		requireReplayedOnce(t, ctx, js, spec(i).MsgID, spec(i).OriginalSubject, spec(i).Payload, reqID)
	}
	assert.Len(t, streamMessages(t, ctx, js, targetStream), 6, "the late arrival was not published")
	assert.Equal(t, "quarantined", deadLetterStatus(t, s, late))

	// Snooze until it grows by two; an owner and a ticket.
	waitUnresolved("the group with its late arrival", "1")
	oncall.Click(row + ` [data-testid="group-menu"] summary`)
	oncall.ClickLoads(row+` [data-testid="group-triage-link"]`, "the group's triage panel", `document.querySelector('[data-testid="group-panel"]')`)
	panel := `[data-testid="group-panel-tenant"][data-tenant="acme"] `
	// The panel is one form with one Save: an owner saved first, then a
	// note, a ticket and a snooze typed together and saved at once (the
	// owner typed before stays).
	oncall.Fill(panel+testID("group-owner-input"), "search-team")
	oncall.ClickLoads(panel+testID("group-triage-save"), "the owner saved", `document.querySelector('[data-testid="flash"]') &&
		document.querySelector('[data-testid="group-owner-input"]').value === "search-team"`)
	oncall.Fill(panel+testID("group-note-input"), "shard 7 flaps under reindex load")
	oncall.Fill(panel+testID("group-ticket-input"), "https://tickets.example/SEARCH-7")
	oncall.Fill(panel+testID("group-snooze-grows"), "2")
	oncall.ClickLoads(panel+testID("group-triage-save"), "the note saved and the group snoozed",
		`document.querySelector('[data-testid="group-ticket"]') && document.querySelector('[data-testid="group-snoozed"]')`)
	assert.Contains(t, oncall.Text(testID("group-snoozed")), "until 2 more arrive")
	oncall.Screenshots("panel")

	groupsShow := func() bool {
		oncall.Open("/groups")
		oncall.WaitUntil("the groups page", `document.querySelector('[data-testid="group-count"]')`)
		return oncall.Exists(row)
	}
	assert.False(t, groupsShow(), "snoozed: not on the groups page")
	oncall.Open("/groups?state=snoozed")
	oncall.WaitUntil("the snoozed groups", `document.querySelector('`+row+`')`)
	assert.Equal(t, "search-team", oncall.Text(row + ` [data-testid="group-owner"]`)[len("owner "):])
	assert.Equal(t, "https://tickets.example/SEARCH-7", oncall.Attr(row+` [data-testid="group-ticket"]`, "href"))
	oncall.Screenshots("snoozed")

	arrive(7)
	assert.False(t, groupsShow(), "grown by one: still snoozed")
	arrive(8)
	err = wait.Poll(2*time.Minute, 500*time.Millisecond, func() error {
		if !groupsShow() {
			return wait.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "grown by two: back on the groups page")
	assert.Equal(t, "3", oncall.Text(row+` [data-testid="group-unresolved"]`))
	assert.False(t, oncall.Exists(row+` [data-testid="group-snoozed"]`), "awake")
	var snoozes int
	require.NoError(t, s.DB.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action IN ('group.snooze', 'group.assign', 'group.note')
		AND object_id = $1 AND tenant = 'acme' AND actor_email = $2`, fp, userOncall).Scan(&snoozes))
	assert.Equal(t, 3, snoozes, "snooze, owner and note are audited")
	oncall.Screenshot("")
}
