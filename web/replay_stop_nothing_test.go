package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRequestPageOffersNoStopWhereNothingMayRepublish: a request done with
// problems whose item needed two approvers (a refund) publishes nothing
// more, and its item may only be settled applied or not applied: its page
// offers no emergency stop, the stop page does not list it, and a stop
// posted anyway is a conflict that says why, on the page, and leaves it
// done with problems.
func TestRequestPageOffersNoStopWhereNothingMayRepublish(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, requester := b.SignIn(t, "acme:oncall")
	first, _ := b.SignIn(t, "acme:approver")
	second, _ := b.SignIn(t, "acme:approver")
	refund := testfactory.Request(t, b.Replays, requester.Actor, []int64{seed(t, b, "acme", "orders.refund", "nothing-refund", nil)},
		replay.SubmitInput{Reason: "the refund timed out"})
	phrase, err := b.Replays.ConfirmationFor(t.Context(), refund.ID)
	require.NoError(t, err)
	path := fmt.Sprintf("/replay/requests/%d", refund.ID)
	for _, c := range []*http.Client{first, second} {
		resp := b.Do(t, c, "POST", path+"/approve", url.Values{"intent": {refund.IntentHex()}, "version": {strconv.Itoa(refund.Version)}, "confirmation": {phrase}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	}
	testfactory.NeedsPerson(t, b.Pool, refund.ID)

	page := b.Do(t, second, "GET", path, nil, nil).Doc(t)
	require.Equal(t, 1, page.Find(`[data-testid="reconcile-form"]`).Length(), "the item waits for a person")
	assert.Zero(t, page.Find(`[data-testid="stop-form"]`).Length(), "a stop would change nothing")
	stops := b.Do(t, second, "GET", "/replay/stop", nil, nil).Doc(t)
	assert.Zero(t, stops.Find(`[data-testid="stop-request"]`).Length(), "nothing of it may still publish: %q", textOf(stops, `[data-testid="stop-requests"]`))

	resp := b.Do(t, second, "POST", path+"/stop", url.Values{"reason": {"incident 4"}, "confirm": {"STOP"}}, nil)
	assert.Equal(t, http.StatusConflict, resp.Status, resp.Body)
	assert.Contains(t, textOf(resp.Doc(t), `[data-testid="flash"][data-kind="error"]`), "Nothing to stop")
	r, err := b.Replays.Request(t.Context(), refund.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusDoneWithProblems, r.Status)
}
