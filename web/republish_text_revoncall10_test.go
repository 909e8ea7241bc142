package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall10RepublishNotYetDoneIsNotSaidDone: an approver settles an
// item that needs reconciliation with "Not applied, republish". The item
// goes back to the workers (job pending, request running), and its row on
// the request page reads "to go — not applied, as <approver> found (…):
// published again under the same message id" (the settle stores that
// text as the job's result, ReconcileItem). Nothing has been published
// again: the job waits for a worker, and may still wait for its slot, be
// deferred, blocked or fail. The text states as done what has not
// happened, beside a badge that says it has not; on-call and approver
// read "published again" and stop watching. Seen on the screens server
// (no replay worker there): request 4's item FACTORY:58 after "Not
// applied, republish" stays "to go … published again under the same
// message id".
//
// Severity: low. Expected: until the worker publishes it, the row says it
// will be published again (or says nothing of publishing), not that it
// was.
func TestRevOncall10RepublishNotYetDoneIsNotSaidDone(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "search.index_update", "rvo10-republish", nil)
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.Pool, req.ID)
	// No replay worker runs in the test console: what the settle leaves
	// is what a page shows until a worker takes the job.
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	resp := b.Do(t, approver, "POST", fmt.Sprintf("%s/items/%d/reconcile", path, id),
		url.Values{"choice": {"republish"}, "note": {"checked index prod-eu: doc absent"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	var state string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT state FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&state))
	require.Equal(t, "pending", state, "the job waits for a worker: nothing was published again yet")

	d := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	row := strings.Join(strings.Fields(d.Find(`[data-testid="replay-item-verdict"]`).Text()), " ")
	require.Contains(t, row, "to go", "the item's badge says it is still to go")
	assert.NotContains(t, row, "published again under the same message id",
		"the row says the item was published again while its job still waits for a worker: %q", row)
}
