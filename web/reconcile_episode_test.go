package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// reconcileFormOf is the reconcile form of item dl on a request page, as
// a browser sends it (without the button's choice).
func reconcileFormOf(t *testing.T, d *goquery.Document, dl int64) (action string, values url.Values) {
	t.Helper()
	form := d.Find(`[data-testid="reconcile-form"]`).FilterFunction(func(_ int, f *goquery.Selection) bool {
		return f.Find(fmt.Sprintf(`#reconcile-note-%d`, dl)).Length() > 0
	})
	require.Equal(t, 1, form.Length(), "the item's reconcile form")
	values = url.Values{}
	form.Find(`input[name]`).Each(func(_ int, in *goquery.Selection) {
		values.Set(in.AttrOr("name", ""), in.AttrOr("value", ""))
	})
	return form.AttrOr("action", ""), values
}

// TestReconcileFormDrawnForAnEarlierEpisodeIsAConflict: an approver opens
// a request whose item's outcome nobody can know (attempt 1) and checks
// the target; meanwhile a colleague settles it "not applied, republish",
// and the republish's outcome is unknown too (attempt 2). The first
// approver's "not applied, leave it", about attempt 1, does not settle
// attempt 2, which they never saw (and which may have landed): it is a
// conflict (409), the page comes back with the item waiting for a
// decision about the attempt it now shows, nothing is settled or audited
// as settled, and a decision posted from that page settles it.
func TestReconcileFormDrawnForAnEarlierEpisodeIsAConflict(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	_, requester := b.SignIn(t, "acme:oncall")
	first, _ := b.SignIn(t, "acme:approver")
	second, _ := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "search.index_update", "reconcile-episode-1", nil)
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{id}, replay.SubmitInput{Reason: "reindex"})
	testfactory.NeedsPerson(t, b.Pool, req.ID) // attempt 1: outcome unknown
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	action, mine := reconcileFormOf(t, b.Do(t, first, "GET", path, nil, nil).Doc(t), id)
	_, theirs := reconcileFormOf(t, b.Do(t, second, "GET", path, nil, nil).Doc(t), id)
	theirs.Set("choice", "republish")
	theirs.Set("note", "the index has no doc reconcile-episode-1")
	resp := b.Do(t, second, "POST", action, theirs, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	testfactory.NeedsPerson(t, b.Pool, req.ID) // attempt 2, published again: outcome unknown too

	settled := b.AuditCount(t, "outcome = 'ok' AND action = 'replay.item.reconciled'")
	mine.Set("choice", "not_applied")
	mine.Set("note", "the index had no doc reconcile-episode-1 at 03:00")
	resp = b.Do(t, first, "POST", action, mine, nil)
	var state string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT state FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&state))
	assert.Equal(t, http.StatusConflict, resp.Status, "a decision about attempt 1 posted after attempt 2's outcome became unknown")
	assert.Equal(t, "needs_reconciliation", state, "attempt 2 waits for a decision about itself")
	assert.Equal(t, settled, b.AuditCount(t, "outcome = 'ok' AND action = 'replay.item.reconciled'"), "nothing settled")
	if resp.Status != http.StatusConflict {
		return
	}
	page := resp.Doc(t)
	assert.Contains(t, textOf(page, `[data-testid="reconcile-error"]`), "again")
	_, again := reconcileFormOf(t, page, id)
	assert.Equal(t, "the index had no doc reconcile-episode-1 at 03:00", again.Get("note"), "the note as typed")
	again.Set("choice", "applied")
	again.Set("note", "the index holds doc reconcile-episode-1 since 03:12")
	resp = b.Do(t, first, "POST", action, again, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT state FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&state))
	assert.Equal(t, "replayed", state)
}
