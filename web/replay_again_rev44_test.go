package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// draftedAgain is what POST path/again drafted, by dead letter, in item
// order, and the batch it went to (from the redirect to the confirm page).
func draftedAgain(t *testing.T, b *testfactory.Console, resp testfactory.Response) (string, []int64) {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	batch, ok := strings.CutPrefix(resp.Header.Get("Location"), "/replay/batches/")
	require.True(t, ok, "to the confirm page: %s", resp.Header.Get("Location"))
	batch, _, _ = strings.Cut(batch, "?")
	var ids []int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(i.dead_letter_id ORDER BY i.position), '{}')
        FROM replay_items i JOIN replay_requests r ON r.id = i.request_id WHERE r.batch = $1`, batch).Scan(&ids))
	return batch, ids
}

// requests is how many replay requests there are.
func requests(t *testing.T, b *testfactory.Console) int {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM replay_requests`).Scan(&n))
	return n
}

// TestRev44RequestAgainDraftsWhatTheStopLeft: after an emergency stop the
// page said "5 replayed · 46 cancelled" and the stop dialog "what was
// stopped must be requested again", but nothing led there: the list has no
// filter by request, and the cancelled dead letters, back in quarantine,
// were mixed with new arrivals. POST /replay/requests/:id/again drafts a
// new request of exactly the request's dead letters it did not replay
// that are still in quarantine (not the replayed one, not one resolved
// since, not a new arrival), judged afresh, with no approval of the old
// one, audited as any draft, on to the confirm page. It needs the right
// to request replays of the request's class in its tenant (403 without,
// 404 for another tenant's request), refuses a request still open or
// with nothing left, and a cross-site POST.
func TestRev44RequestAgainDraftsWhatTheStopLeft(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncallClient, oncall := b.SignIn(t, "acme:oncall")
	approverClient, _ := b.SignIn(t, "acme:approver")

	var ids []int64
	for i := range 6 {
		ids = append(ids, seed(t, b, "acme", "search.index_update", fmt.Sprintf("rev44-again-%d", i), nil))
	}
	req := testfactory.Request(t, b.Replays, oncall.Actor, ids, replay.SubmitInput{Reason: "reindex"})
	require.Equal(t, replay.StatusApproved, req.Status, "rebuildable needs no approver; no worker runs here")
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	t.Run("StillOpen", func(t *testing.T) {
		n := requests(t, b)
		resp := b.Do(t, oncallClient, http.MethodPost, path+"/again", url.Values{}, nil)
		assert.Equal(t, http.StatusConflict, resp.Status, resp.Body)
		assert.Contains(t, textOf(resp.Doc(t), `[data-testid="flash"]`), "it still holds its items")
		assert.Equal(t, n, requests(t, b), "nothing drafted")
	})

	// The first item was published before the stop; the stop cancels the rest.
	_, err := b.DB.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET state = 'replayed', handed_at = now(), first_published_at = now()
        WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, ids[0])
	require.NoError(t, err)
	testfactory.SetStatus(t, b.Pool, dlq.StatusReplayed, ids[0])
	resp := b.Do(t, approverClient, http.MethodPost, path+"/stop", url.Values{"reason": {"wrong index"}, "confirm": {"STOP"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	stopped, err := b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusCancelled, stopped.Status)
	// Since: one is resolved by hand, and a new dead letter arrives.
	resp = b.Do(t, oncallClient, http.MethodPost, fmt.Sprintf("/deadletters/%d/resolve", ids[1]), url.Values{"reason": {"fixed by hand"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	arrived := seed(t, b, "acme", "search.index_update", "rev44-again-new", nil)
	for _, id := range append(ids[2:], arrived) {
		require.Equal(t, "quarantined", deadLetterStatusOf(t, b, id))
	}
	n, err := b.Replays.CountNotReplayed(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, 4, n, "what the request page offers to request again")

	t.Run("NoRight", func(t *testing.T) {
		viewer, _ := b.SignIn(t, "acme:viewer") // reads the request, may not request replays
		before := requests(t, b)
		assert.Equal(t, http.StatusForbidden, b.Do(t, viewer, http.MethodPost, path+"/again", url.Values{}, nil).Status)
		other, _ := b.SignIn(t, "globex:oncall") // requests replays, in another tenant
		assert.Equal(t, http.StatusNotFound, b.Do(t, other, http.MethodPost, path+"/again", url.Values{}, nil).Status)
		cross := b.Do(t, oncallClient, http.MethodPost, path+"/again", url.Values{}, map[string]string{"Sec-Fetch-Site": "cross-site"})
		assert.Equal(t, http.StatusForbidden, cross.Status, "a POST another site started")
		assert.Equal(t, before, requests(t, b), "nothing drafted")
	})

	t.Run("Success", func(t *testing.T) {
		mark := b.AuditCount(t, "true")
		batch, drafted := draftedAgain(t, b, b.Do(t, oncallClient, http.MethodPost, path+"/again", url.Values{}, nil))
		assert.Equal(t, ids[2:], drafted, "the cancelled ones still in quarantine: not the replayed one, not the one resolved since, not the new arrival")
		drafts, err := b.Replays.Batch(ctx, batch)
		require.NoError(t, err)
		require.Len(t, drafts, 1)
		d := drafts[0]
		assert.Equal(t, replay.StatusDraft, d.Status)
		assert.Equal(t, oncall.Actor.Subject, d.Requester.Subject)
		assert.NotEqual(t, req.ID, d.ID)
		assert.Zero(t, b.AuditCount(t, "action = 'replay.approve' AND object_id = $1", fmt.Sprint(d.ID)))
		var approvals int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_approvals WHERE request_id = $1`, d.ID).Scan(&approvals))
		assert.Zero(t, approvals, "no approval carries over")
		assert.Equal(t, 1, b.AuditCount(t, "action = 'replay.draft' AND outcome = 'ok' AND object_id = $1 AND actor_subject = $2", fmt.Sprint(d.ID), oncall.Subject),
			"audited as a draft")
		assert.Greater(t, b.AuditCount(t, "true"), mark)
		page := b.Do(t, oncallClient, http.MethodGet, "/replay/batches/"+batch, nil, nil)
		require.Equal(t, http.StatusOK, page.Status, page.Body)
	})

	t.Run("NothingLeft", func(t *testing.T) {
		testfactory.SetStatus(t, b.Pool, dlq.StatusResolved, ids[2:]...)
		before := requests(t, b)
		resp := b.Do(t, oncallClient, http.MethodPost, path+"/again", url.Values{}, nil)
		assert.Equal(t, http.StatusConflict, resp.Status, resp.Body)
		assert.Contains(t, textOf(resp.Doc(t), `[data-testid="flash"]`), "Nothing of request")
		assert.Equal(t, before, requests(t, b), "nothing drafted")
	})
}

// TestRev44RequestAgainTakesWhatWasSettledNotApplied: an item settled
// "not applied, leave it" goes back to quarantine, and "to publish it
// again, leave it and request it again" (docs/replay.md): the request,
// done with problems, offers it; its other item, still waiting for a
// person, stays out (its dead letter is held).
func TestRev44RequestAgainTakesWhatWasSettledNotApplied(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncallClient, oncall := b.SignIn(t, "acme:oncall")
	approverClient, _ := b.SignIn(t, "acme:approver")
	left := seed(t, b, "acme", "search.index_update", "rev44-again-left", nil)
	waits := seed(t, b, "acme", "search.index_update", "rev44-again-waits", nil)
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{left, waits}, replay.SubmitInput{Reason: "reindex"})
	testfactory.NeedsPerson(t, b.Pool, req.ID)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	resp := b.Do(t, approverClient, http.MethodPost, fmt.Sprintf("%s/items/%d/reconcile", path, left),
		url.Values{"choice": {"not_applied"}, "note": {"the index does not hold it"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.Equal(t, "quarantined", deadLetterStatusOf(t, b, left))

	_, drafted := draftedAgain(t, b, b.Do(t, oncallClient, http.MethodPost, path+"/again", url.Values{}, nil))
	assert.Equal(t, []int64{left}, drafted)
}

// deadLetterStatusOf is dead letter id's status.
func deadLetterStatusOf(t *testing.T, b *testfactory.Console, id int64) string {
	t.Helper()
	var st string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&st))
	return st
}
