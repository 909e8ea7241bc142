package web_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall10RequestPageSaysWhoSettlesTheRequestersItems: the on-call
// who requested a replay watches its request page. The request ends done
// with problems, its items "needs reconciliation" ("no PubAck, and the
// window no longer covers the publish"), and the page offers them nothing
// and says nothing more: no form (the requester may not settle their own
// request's items, replaypolicy.MayReconcile) and no word of who may or
// what to do, though the rule's reason exists and each item's dead letter
// page says it ("It waits for an approver of acme to settle it … tell one
// of them if it is urgent"). The page where the on-call watches the
// statuses is a dead end for the very person who asked for the replay.
// Seen: /tmp/rc10/req4-oncall-1024.png (request 4 as its requester).
//
// Severity: low. Expected: an item waiting for someone else to settle it
// says so on the request page (who settles it: an approver of the tenant,
// not the requester).
func TestRevOncall10RequestPageSaysWhoSettlesTheRequestersItems(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, who := b.SignIn(t, "acme:oncall", "acme:approver")
	id := seed(t, b, "acme", "search.index_update", "rvo10-settle", nil)
	req := testfactory.Request(t, b.Replays, who.Actor, []int64{id}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.Pool, req.ID)

	resp := b.Do(t, oncall, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	require.Equal(t, 1, d.Find(`[data-testid="replay-item"]`).Length())
	require.Zero(t, d.Find(`[data-testid="reconcile-form"]`).Length(), "the requester may not settle it (MayReconcile)")

	dl := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil).Doc(t)
	require.Contains(t, dl.Find(`[data-testid="deadletter-actions"]`).Text(), "It waits for an approver of acme to settle it",
		"the dead letter's page says who settles it")

	// Who settles is said once, in the Items section above the rows
	// (fixleft11: it was repeated on every row).
	row := d.Find(`[data-testid="replay-items-settler"]`).Text()
	assert.Contains(t, row, "approver",
		"the request page shows the requester an item that needs reconciliation with no form and no word of who settles it: %q", row)
}
