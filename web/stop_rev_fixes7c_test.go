package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevFixes7cStopPanelSaysTwoApproverRequestMayStillRepublish: severity
// low. Since fix-reconcile7 an item of a request that needed two
// approvers (manual: a refund) is never republished on one approver's
// word (MayRepublish refuses; the request page offers only applied / leave
// it). The emergency stop page still lists such a request done with
// problems under "Replays that may still publish" with "may still
// republish items that need reconciliation", and its request page's stop
// card still says "settling an item that needs reconciliation may publish
// it again. A stop ends that". A tired on-call reads that the refund may
// go out again unless they stop it, and the page contradicts the rule
// (and the reconcile form beside it). Expected: the line is shown only
// for a request whose items may be republished (MayRepublish), as for the
// rebuildable request below; a two-approver one says nothing of the kind.
func TestRevFixes7cStopPanelSaysTwoApproverRequestMayStillRepublish(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	_, requester := b.SignIn(t, "acme:oncall")
	first, _ := b.SignIn(t, "acme:approver")
	second, _ := b.SignIn(t, "acme:approver")

	id := seed(t, b, "acme", "orders.refund", "rf7c-stop-refund", nil)
	refund := testfactory.Request(t, b.Replays, requester.Actor, []int64{id}, replay.SubmitInput{Reason: "the refund timed out"})
	require.Equal(t, 2, refund.ApprovalsNeeded)
	phrase, err := b.Replays.ConfirmationFor(ctx, refund.ID)
	require.NoError(t, err)
	path := fmt.Sprintf("/replay/requests/%d", refund.ID)
	for _, c := range []*http.Client{first, second} {
		resp := b.Do(t, c, "POST", path+"/approve", url.Values{"intent": {refund.IntentHex()}, "version": {strconv.Itoa(refund.Version)}, "confirmation": {phrase}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	}
	testfactory.NeedsPerson(t, b.Pool, refund.ID)
	r, err := b.Replays.Request(ctx, refund.ID)
	require.NoError(t, err)
	require.Equal(t, replaypolicy.CheckRepublishTwoApprovers, b.Replays.MayRepublish(r).Check, "the rule: no republish on one word")

	// A rebuildable one, which may be republished: its line is right.
	other := seed(t, b, "acme", "search.index_update", "rf7c-stop-rebuild", nil)
	easy := testfactory.Request(t, b.Replays, requester.Actor, []int64{other}, replay.SubmitInput{Reason: "reindex"})
	testfactory.NeedsPerson(t, b.Pool, easy.ID)

	page := b.Do(t, second, "GET", "/replay/stop", nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	rowOf := func(id int64) *goquery.Selection {
		return page.Doc(t).Find(`[data-testid="stop-request"]`).FilterFunction(func(_ int, s *goquery.Selection) bool {
			return s.Find("td").First().Text() == fmt.Sprintf("#%d", id)
		})
	}
	require.Equal(t, 1, rowOf(easy.ID).Length())
	assert.Equal(t, 1, rowOf(easy.ID).Find(`[data-testid="stop-request-republish"]`).Length(), "a rebuildable item may be republished")
	assert.Zero(t, rowOf(refund.ID).Find(`[data-testid="stop-request-republish"]`).Length(),
		"the stop page says of the refund request: %q", rowOf(refund.ID).Find(`[data-testid="stop-request-republish"]`).Text())

	req := b.Do(t, second, "GET", path, nil, nil).Doc(t)
	require.Equal(t, 1, req.Find(`[data-testid="reconcile-form"]`).Length())
	assert.Zero(t, req.Find(`[data-testid="reconcile-republish"]`).Length(), "the form offers no republish")
	assert.Zero(t, req.Find(`[data-testid="stop-republish-hint"]`).Length(),
		"yet the stop card beside it says: %q", textOf(req, `[data-testid="stop-republish-hint"]`))
}
