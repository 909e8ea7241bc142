package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// pollHeaders are what a page's own poll sends (htmx, views.pollHeaders).
var pollHeaders = map[string]string{"HX-Request": "true", authz.PollHeader: "1"}

// pollOf is the address a request page's (or a poll answer's) progress
// block polls.
func pollOf(t *testing.T, d *goquery.Document) string {
	t.Helper()
	u, ok := byID(d, "replay-progress").Attr("hx-get")
	require.True(t, ok, "the progress polls")
	return u
}

// verdictCell is the cell of dead letter dl's item that a poll swaps in.
func verdictCell(d *goquery.Document, dl int64) *goquery.Selection {
	return d.Find(fmt.Sprintf(`td#item-verdict-%d`, dl))
}

// TestFixUxLiveRunningRequestPollBringsItsItems: while a replay ran, its
// page contradicted itself: the progress, polled, said "28 replayed · 2 to
// go" above "2 of 3 replayed items came back" and rows still pending,
// which were drawn once, with the page. The poll now brings, out of band,
// the verdict cell of each row that changed since the page's last poll
// (its outcome, and the dead letter it came back as) and the count of the
// items that came back; nothing more when nothing changed. An item that
// comes to need a person shows its form to one who may settle it, kept as
// the page has it across polls (hx-preserve: what they type stays); one
// settled meanwhile by someone else reloads the page (which app.js holds
// while someone types), rather than take the form from under them.
func TestFixUxLiveRunningRequestPollBringsItsItems(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, requester := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	dls := []int64{
		seed(t, b, "acme", "search.index_update", "live-0", nil),
		seed(t, b, "acme", "search.index_update", "live-1", nil),
		seed(t, b, "acme", "search.index_update", "live-2", nil),
	}
	req := testfactory.Request(t, b.Replays, requester.Actor, dls, replay.SubmitInput{Reason: "reindex"})
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := b.DB.OwnerPool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	exec(`UPDATE replay_requests SET status = 'running' WHERE id = $1`, req.ID)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	page := b.Do(t, oncall, "GET", path, nil, nil).Doc(t)
	require.Equal(t, "running", byID(page, "replay-status").AttrOr("data-status", ""))
	poll := pollOf(t, page)
	assert.Contains(t, poll, "live=", "the poll carries what the page shows of its items")
	for _, dl := range dls {
		require.Equal(t, 1, verdictCell(page, dl).Length(), "each row's cell can be swapped by its id")
	}
	require.Equal(t, 1, page.Find(`#replay-came-back-box`).Length(), "where the count of returns goes, empty for now")
	assert.Zero(t, byID(page, "replay-came-back").Length())

	// Two are replayed, and the consumer fails on the first again.
	exec(`UPDATE replay_jobs SET state = 'replayed', handed_at = now(), first_published_at = now() WHERE request_id = $1 AND dead_letter_id = ANY($2)`,
		req.ID, dls[:2])
	back := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "live-0"})
	exec(`UPDATE dead_letters SET replay_of = $1, generation = 1 WHERE id = $2`, dls[0], back)

	got := b.Do(t, oncall, "GET", poll, nil, pollHeaders)
	require.Equal(t, http.StatusOK, got.Status, got.Body)
	assert.Empty(t, got.Header.Get("HX-Refresh"), "the page is not reloaded: it is brought up to date")
	d := got.Doc(t)
	assert.Equal(t, "2", text(byID(d, "progress-replayed")))
	for i, want := range []string{"replayed", "replayed", "pending"} {
		cell := verdictCell(d, dls[i])
		require.Equal(t, 1, cell.Length(), "item %d's cell comes with the poll", i)
		assert.Equal(t, "true", cell.AttrOr("hx-swap-oob", ""), "swapped in by its id")
		assert.Equal(t, want, cell.Find(`[data-testid="replay-item-outcome"]`).AttrOr("data-outcome", ""), "item %d as it is now", i)
	}
	assert.Contains(t, text(verdictCell(d, dls[0]).Find(`[data-testid="replay-item-came-back"]`)), fmt.Sprintf("came back as #%d", back))
	assert.Zero(t, verdictCell(d, dls[1]).Find(`[data-testid="replay-item-came-back"]`).Length())
	box := d.Find(`#replay-came-back-box`)
	assert.Equal(t, "true", box.AttrOr("hx-swap-oob", ""))
	assert.Equal(t, "1 of 2 replayed items came back as a new dead letter.", text(box.Find(`[data-testid="replay-came-back-count"]`)),
		"the count of returns beside the progress that counts them")
	next := pollOf(t, d)
	require.NotEqual(t, poll, next, "the next poll carries what the page shows now")

	// Nothing changed: nothing is redrawn.
	d = b.Do(t, oncall, "GET", next, nil, pollHeaders).Doc(t)
	assert.Equal(t, "2", text(byID(d, "progress-replayed")))
	assert.Zero(t, d.Find(`[hx-swap-oob]`).Length(), "no row, no count: the page shows them already")
	assert.Equal(t, next, pollOf(t, d))

	// The third needs a person. The approver's page gets its form, in a
	// part each later swap keeps as the page has it; the requester's says
	// who settles it.
	ap := pollOf(t, b.Do(t, approver, "GET", path, nil, nil).Doc(t))
	exec(`UPDATE replay_jobs SET state = 'needs_reconciliation', handed_at = now(), first_published_at = now(),
        result = 'no PubAck, and the window no longer covers the publish' WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, dls[2])
	d = b.Do(t, approver, "GET", ap, nil, pollHeaders).Doc(t)
	cell := verdictCell(d, dls[2])
	assert.Equal(t, "needs_reconciliation", cell.Find(`[data-testid="replay-item-outcome"]`).AttrOr("data-outcome", ""))
	kept := cell.Find(fmt.Sprintf(`#item-settle-%d`, dls[2]))
	require.Equal(t, 1, kept.Length(), "the form to settle it comes")
	_, preserved := kept.Attr("hx-preserve")
	assert.True(t, preserved, "and a later swap keeps it as the page has it, with what was typed")
	assert.Equal(t, 1, kept.Find(`[data-testid="reconcile-form"]`).Length())
	d = b.Do(t, oncall, "GET", next, nil, pollHeaders).Doc(t)
	settler := d.Find(`#replay-items-settler-box`)
	assert.Equal(t, "true", settler.AttrOr("hx-swap-oob", ""))
	assert.Contains(t, text(settler.Find(`[data-testid="replay-items-settler"]`)), "waits for an approver of acme to settle it", "the requester reads who settles it")
	assert.Zero(t, d.Find(`[data-testid="reconcile-form"]`).Length(), "and gets no form")

	// Someone else settles it: the approver's page reloads, its form gone
	// (a person typing in it keeps the page, told that it changed).
	ap = pollOf(t, b.Do(t, approver, "GET", ap, nil, pollHeaders).Doc(t))
	exec(`UPDATE replay_jobs SET state = 'replayed' WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, dls[2])
	got = b.Do(t, approver, "GET", ap, nil, pollHeaders)
	assert.Equal(t, "true", got.Header.Get("HX-Refresh"), "an item settled elsewhere reloads the page")
}

// TestFixUxLiveRunningRequestPollRedrawsOnlyWhatChanged: the poll runs
// every 2 s for every open page, and a page lists up to 20,000 items: it
// redraws the rows of the blocks of liveBlock (100) rows one of which
// changed, not the page.
func TestFixUxLiveRunningRequestPollRedrawsOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, requester := b.SignIn(t, "acme:oncall")
	letters := make([]testfactory.Letter, 150)
	for i := range letters {
		letters[i] = testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("bulk-%03d", i)}
	}
	dls := testfactory.DeadLetters(t, b.Pool, letters...)
	req := testfactory.Request(t, b.Replays, requester.Actor, dls, replay.SubmitInput{Reason: "reindex"})
	_, err := b.DB.OwnerPool.Exec(ctx, `UPDATE replay_requests SET status = 'running' WHERE id = $1`, req.ID)
	require.NoError(t, err)
	page := b.Do(t, oncall, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil).Doc(t)
	var order []string // the cells' ids, in the page's order
	page.Find(`td[id^="item-verdict-"]`).Each(func(_ int, s *goquery.Selection) { order = append(order, s.AttrOr("id", "")) })
	require.Len(t, order, 150)
	first := b.Do(t, oncall, "GET", pollOf(t, page), nil, pollHeaders).Doc(t)
	require.Zero(t, first.Find(`[hx-swap-oob]`).Length(), "nothing changed since the page was read")

	changed := dls[120]
	_, err = b.DB.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET state = 'replayed', handed_at = now(), first_published_at = now() WHERE request_id = $1 AND dead_letter_id = $2`,
		req.ID, changed)
	require.NoError(t, err)
	d := b.Do(t, oncall, "GET", pollOf(t, first), nil, pollHeaders).Doc(t)
	at := -1
	for i, id := range order {
		if id == fmt.Sprintf("item-verdict-%d", changed) {
			at = i
		}
	}
	require.GreaterOrEqual(t, at, 0)
	var sent []string
	d.Find(`td[hx-swap-oob]`).Each(func(_ int, s *goquery.Selection) { sent = append(sent, s.AttrOr("id", "")) })
	block := at / 100 * 100
	assert.Equal(t, order[block:min(len(order), block+100)], sent, "the block of the row that changed, and no other row")
	assert.Equal(t, "replayed", verdictCell(d, changed).Find(`[data-testid="replay-item-outcome"]`).AttrOr("data-outcome", ""))
	assert.True(t, strings.Contains(pollOf(t, d), "live="))
}

// TestRev44BigRunningRequestPollReadsItsFirstRows: the poll of a running
// request of more than liveEvery (1,000) items read every row of its page
// and the returns of its first 10,000 items on nearly every poll, since
// its progress changes as it runs (review round 44). It reads its first
// 1,000 rows and their returns only: a change there is sent, one past them
// shows on the next load, and the blocks past them stay in the stamp as the
// page has them.
func TestRev44BigRunningRequestPollReadsItsFirstRows(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, requester := b.SignIn(t, "acme:oncall")
	letters := make([]testfactory.Letter, 1050)
	for i := range letters {
		letters[i] = testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("big-%04d", i)}
	}
	dls := testfactory.DeadLetters(t, b.Pool, letters...)
	req := testfactory.Request(t, b.Replays, requester.Actor, dls, replay.SubmitInput{Reason: "reindex"})
	_, err := b.DB.OwnerPool.Exec(ctx, `UPDATE replay_requests SET status = 'running' WHERE id = $1`, req.ID)
	require.NoError(t, err)
	page := b.Do(t, oncall, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil).Doc(t)
	var order []string // the cells' ids, in the page's order
	page.Find(`td[id^="item-verdict-"]`).Each(func(_ int, s *goquery.Selection) { order = append(order, s.AttrOr("id", "")) })
	require.Len(t, order, 1050)
	idOf := func(cell string) int64 {
		var id int64
		_, err := fmt.Sscanf(cell, "item-verdict-%d", &id)
		require.NoError(t, err)
		return id
	}
	near, far := idOf(order[10]), idOf(order[1020])
	_, err = b.DB.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET state = 'replayed', handed_at = now(), first_published_at = now()
        WHERE request_id = $1 AND dead_letter_id = ANY($2)`, req.ID, []int64{near, far})
	require.NoError(t, err)
	d := b.Do(t, oncall, "GET", pollOf(t, page), nil, pollHeaders).Doc(t)
	var sent []string
	d.Find(`td[hx-swap-oob]`).Each(func(_ int, s *goquery.Selection) { sent = append(sent, s.AttrOr("id", "")) })
	assert.Equal(t, order[:100], sent, "the first block, whose row changed, and no row past the first 1,000")
	assert.Equal(t, "replayed", verdictCell(d, near).Find(`[data-testid="replay-item-outcome"]`).AttrOr("data-outcome", ""))
	live := pollOf(t, d)
	require.Contains(t, live, "live=")
	again := b.Do(t, oncall, "GET", live, nil, pollHeaders).Doc(t)
	assert.Zero(t, again.Find(`td[hx-swap-oob]`).Length(), "the stamp keeps the blocks past those read: nothing is sent again")
	reloaded := b.Do(t, oncall, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil).Doc(t)
	assert.Equal(t, "replayed", verdictCell(reloaded, far).Find(`[data-testid="replay-item-outcome"]`).AttrOr("data-outcome", ""),
		"a row past the first 1,000 shows on the next load")
}
