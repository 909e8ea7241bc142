package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixUxLiveSubmittedPageFollowsItsRequests: the page a selection
// submitted as several requests lands on ("Replay requested") was drawn
// once: a request that ran and ended there still said "approved at once"
// and "0 replayed · 1 to go", and never said that a replayed item came
// back, where the replays list said "1 came back". Its table now polls
// (every 2 s while one runs or may, every 5 s while they only wait for
// approval, not once every one ended) and each poll brings each request's
// status, counts, came-back note and next step as they are.
func TestFixUxLiveSubmittedPageFollowsItsRequests(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	other, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	index := seed(t, b, "globex", "search.index_update", "doc-live", nil)
	mail := seed(t, b, "acme", "email.send", "mail-live", opHeader("op-live"))

	confirm := draftPage(t, b, oncall, index, mail)
	resp := b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"consumers fixed"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.Equal(t, confirm, resp.Header.Get("Location"))
	page := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	live := byID(page, "submitted-live")
	require.Equal(t, 1, live.Length())
	poll, ok := live.Attr("hx-get")
	require.True(t, ok, "the table polls while its requests may change")
	assert.Equal(t, "every 2s", live.AttrOr("hx-trigger", ""), "one of them is approved: it runs")
	assert.Contains(t, live.AttrOr("hx-headers", ""), authz.PollHeader, "marked a poll (no idle time moved, no flash taken)")
	rows := rowsByTenant(page)
	require.Len(t, rows, 2)
	assert.Equal(t, "approved", rows["globex"].AttrOr("data-status", ""))
	assert.Zero(t, page.Find(`[data-testid="submitted-came-back"]`).Length())

	// The rebuildable request ran: its item was replayed, and the consumer
	// failed on it again (a dead letter linked to the one replayed).
	globex := rows["globex"].AttrOr("data-id", "")
	_, err := b.DB.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET state = 'replayed', handed_at = now(), first_published_at = now() WHERE request_id = $1`, globex)
	require.NoError(t, err)
	_, err = b.DB.OwnerPool.Exec(ctx, `UPDATE replay_requests SET status = 'done' WHERE id = $1`, globex)
	require.NoError(t, err)
	back := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: "doc-live"})
	_, err = b.DB.OwnerPool.Exec(ctx, `UPDATE dead_letters SET replay_of = $1, generation = 1 WHERE id = $2`, index, back)
	require.NoError(t, err)

	hdr := map[string]string{"HX-Request": "true", authz.PollHeader: "1"}
	got := b.Do(t, oncall, "GET", poll, nil, hdr)
	require.Equal(t, http.StatusOK, got.Status, got.Body)
	d := got.Doc(t)
	assert.Zero(t, d.Find(`nav, [data-testid="flashes"]`).Length(), "the poll answers the table alone")
	live = byID(d, "submitted-live")
	require.Equal(t, 1, live.Length())
	rows = rowsByTenant(d)
	require.Len(t, rows, 2)
	ran := rows["globex"]
	assert.Equal(t, "done", ran.AttrOr("data-status", ""), "the request that ended says so")
	assert.Equal(t, "1 replayed 1 came back", text(ran.Find(`[data-testid="submitted-items"]`)), "its counts as they are")
	assert.Equal(t, "1 came back", text(ran.Find(`[data-testid="submitted-came-back"]`)), "and that its replayed item came back, as the replays list says")
	assert.True(t, ran.Find(`[data-testid="submitted-came-back"]`).HasClass("hint--warn"), "amber")
	assert.NotContains(t, text(ran.Find(`[data-testid="submitted-next"]`)), "approved at once", "no longer what it did when submitted")
	assert.Equal(t, "pending_approval", rows["acme"].AttrOr("data-status", ""), "the other still waits")
	assert.Equal(t, "every 5s", live.AttrOr("hx-trigger", ""), "only a wait for approvers is left: the poll slows")
	poll = live.AttrOr("hx-get", "")
	require.NotEmpty(t, poll, "it polls on while one may change")

	// The other ends too: the table stops polling.
	_, err = b.DB.OwnerPool.Exec(ctx, `UPDATE replay_requests SET status = 'cancelled' WHERE id = $1`, rows["acme"].AttrOr("data-id", ""))
	require.NoError(t, err)
	d = b.Do(t, oncall, "GET", poll, nil, hdr).Doc(t)
	assert.Equal(t, "cancelled", rowsByTenant(d)["acme"].AttrOr("data-status", ""))
	_, polls := byID(d, "submitted-live").Attr("hx-get")
	assert.False(t, polls, "no poll once every request ended")
	full := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	assert.Equal(t, "1 came back", text(rowsByTenant(full)["globex"].Find(`[data-testid="submitted-came-back"]`)), "the page says it when loaded too")

	// Someone else's selection is not theirs to poll.
	assert.Equal(t, http.StatusNotFound, b.Do(t, other, "GET", poll, nil, hdr).Status)
}

// rowsByTenant are the rows of a submitted selection's table, by tenant.
func rowsByTenant(d *goquery.Document) map[string]*goquery.Selection {
	out := map[string]*goquery.Selection{}
	d.Find(`[data-testid="submitted-request"]`).Each(func(_ int, r *goquery.Selection) {
		out[strings.TrimSpace(r.Find(`td[data-label="Tenant"]`).Text())] = r
	})
	return out
}

// TestRev44SubmittedPagePollCountsReturnsWithinABudget: the poll of the
// page a selection submitted as several requests lands on counted the
// returns of every one of them of up to 1,000 replayed items, every 2 s
// while one of them runs: a selection split by tenant and class into many
// requests made as many probes per poll (review round 44). It counts those
// of at most 1,000 replayed items in all, the smallest requests first; a
// request left out says nothing of returns, as the replays list says
// nothing of a big one.
func TestRev44SubmittedPagePollCountsReturnsWithinABudget(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	letters := make([]testfactory.Letter, 1000)
	for i := range letters {
		letters[i] = testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: fmt.Sprintf("budget-%04d", i)}
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	small := seed(t, b, "acme", "search.index_update", "budget-small", nil)
	confirm := draftPage(t, b, oncall, append(ids, small)...)
	resp := b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"reindex"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	page := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	poll, ok := byID(page, "submitted-live").Attr("hx-get")
	require.True(t, ok)
	rows := rowsByTenant(page)
	require.Len(t, rows, 2)
	for _, tenant := range []string{"acme", "globex"} {
		_, err := b.DB.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET state = 'replayed', handed_at = now(), first_published_at = now() WHERE request_id = $1`,
			rows[tenant].AttrOr("data-id", ""))
		require.NoError(t, err)
	}
	_, err := b.DB.OwnerPool.Exec(ctx, `UPDATE replay_requests SET status = 'running' WHERE id = $1`, rows["globex"].AttrOr("data-id", ""))
	require.NoError(t, err)
	for tenant, of := range map[string]int64{"acme": small, "globex": ids[0]} { // each one came back
		back := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update", MsgID: "budget-back-" + tenant})
		_, err := b.DB.OwnerPool.Exec(ctx, `UPDATE dead_letters SET replay_of = $1, generation = 1 WHERE id = $2`, of, back)
		require.NoError(t, err)
	}
	d := b.Do(t, oncall, "GET", poll, nil, map[string]string{"HX-Request": "true", authz.PollHeader: "1"}).Doc(t)
	rows = rowsByTenant(d)
	require.Len(t, rows, 2)
	assert.Contains(t, rows["acme"].Find(`[data-testid="submitted-came-back"]`).Text(), "1 came back", "the smaller request is counted")
	assert.Zero(t, rows["globex"].Find(`[data-testid="submitted-came-back"]`).Length(), "past the budget: not counted, nothing said")
}
