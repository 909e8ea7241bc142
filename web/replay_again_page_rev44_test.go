package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev44StoppedRequestPageOffersToRequestAgain: the page of a request
// an emergency stop ended offers "Request the N not replayed again", N its
// dead letters the stop cancelled that are still in quarantine (not the
// one it replayed, not one resolved since), to whoever may request replays
// of its class in its tenant; not while it runs, not to a viewer, and not
// once nothing of it is left in quarantine. A refused try says why at the
// offer.
func TestRev44StoppedRequestPageOffersToRequestAgain(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncallClient, oncall := b.SignIn(t, "acme:oncall")
	approverClient, _ := b.SignIn(t, "acme:approver")
	viewer, _ := b.SignIn(t, "acme:viewer")
	var ids []int64
	for i := range 5 {
		ids = append(ids, seed(t, b, "acme", "search.index_update", fmt.Sprintf("rev44-page-%d", i), nil))
	}
	req := testfactory.Request(t, b.Replays, oncall.Actor, ids, replay.SubmitInput{Reason: "reindex"})
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	offer := func(client *http.Client) string {
		t.Helper()
		page := b.Do(t, client, http.MethodGet, path, nil, nil)
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		d := page.Doc(t)
		if d.Find(`[data-testid="request-again"]`).Length() == 0 {
			return ""
		}
		return textOf(d, `[data-testid="request-again-submit"]`)
	}
	assert.Empty(t, offer(oncallClient), "not while it may still publish")

	_, err := b.DB.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET state = 'replayed', handed_at = now(), first_published_at = now()
        WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, ids[0])
	require.NoError(t, err)
	testfactory.SetStatus(t, b.Pool, dlq.StatusReplayed, ids[0])
	resp := b.Do(t, approverClient, http.MethodPost, path+"/stop", url.Values{"reason": {"wrong index"}, "confirm": {"STOP"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	resp = b.Do(t, oncallClient, http.MethodPost, fmt.Sprintf("/deadletters/%d/resolve", ids[1]), url.Values{"reason": {"fixed by hand"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	assert.Equal(t, "Request the 3 not replayed again", offer(oncallClient))
	assert.Empty(t, offer(viewer), "a viewer may not request replays")
	d := b.Do(t, oncallClient, http.MethodGet, path, nil, nil).Doc(t)
	assert.Equal(t, path+"/again", d.Find(`[data-testid="request-again-form"]`).AttrOr("action", ""))
	assert.Contains(t, textOf(d, `[data-testid="progress-summary"]`), "1 replayed · 4 cancelled", "the outcome above it counts the one resolved since as cancelled")

	testfactory.SetStatus(t, b.Pool, dlq.StatusResolved, ids[2:]...)
	assert.Empty(t, offer(oncallClient), "nothing of it left in quarantine")
	refused := b.Do(t, oncallClient, http.MethodPost, path+"/again", url.Values{}, nil)
	assert.Equal(t, http.StatusConflict, refused.Status)
	rd := refused.Doc(t)
	assert.Zero(t, rd.Find(`[data-testid="request-again"]`).Length(), "no offer")
	assert.Contains(t, textOf(rd, `[data-testid="flash"]`), "Nothing of request", "the reason, at the top of the request's page")
}
