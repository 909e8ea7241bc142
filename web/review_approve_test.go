package web_test

// Review (rev-govern): failing tests for paths that reach an effect
// without passing the rule.

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestRequesterCannotRejectOwnRequest: separation of duties says an
// approver approves or rejects, never their own request (DESIGN, users
// table; View.Reviewer: "the viewer is not the requester, so they may
// approve or reject"). The page hides the reject button from the
// requester, but a crafted POST to the reject route by a requester who
// also holds the approver role closes their own request as "rejected",
// and the audit log says it was rejected by a reviewer who was the
// requester.
func TestRequesterCannotRejectOwnRequest(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	both, _ := b.SignIn(t, "acme:oncall", "acme:approver")
	id := seed(t, b, "acme", "email.send", "mail-rej-1", map[string][]string{dlq.HeaderOperationID: {"send-rej-1"}})
	reqPath := requestReplay(t, b, both, id)

	page := b.Do(t, both, "GET", reqPath, nil, nil).Doc(t)
	require.Zero(t, page.Find(`[data-testid="reject"]`).Length(), "the page offers the requester no reject button")

	resp := b.Do(t, both, "POST", reqPath+"/reject", url.Values{"reason": {"my own"}, views.ConfirmedField: {"1"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "a crafted reject by the requester is refused, as a crafted approve is")
	r, err := b.Replays.Request(t.Context(), mustID(t, reqPath))
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, r.Status, "the request was closed as rejected by its own requester")
}

// TestApproverApprovesOnlyWhatThePageShows: an approver "reviews the exact
// intent (items, payload hashes, target subjects ...)" and signs it. The
// request page lists the first 200 items and then says "and N more", with
// no way to read the rest, yet the approve button is there and the
// approval covers every item. For edits the page already refuses this
// ("nobody can approve what they could not read"); items are not held to
// it. A same_operation request may hold 500 items (dev/policy.toml), a
// rebuildable or dedupe one raised to one approver by an unknown_effect
// item 10,000: a requester can put what they want reviewed least after the
// 200th item.
func TestApproverApprovesOnlyWhatThePageShows(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	const n = 201
	letters := make([]testfactory.Letter, n)
	for i := range letters {
		letters[i] = testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: fmt.Sprintf("mail-many-%d", i),
			OperationID: fmt.Sprintf("send-many-%d", i)}
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	req := testfactory.Request(t, b.Replays, oncall.Actor, ids, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	require.Equal(t, n, req.ItemCount)

	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	page := b.Do(t, approver, "GET", path, nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	d := page.Doc(t)
	shown := d.Find(`[data-testid="replay-items"] [data-testid="replay-item"]`).Length()
	if shown == n {
		return // the page shows every item it approves (one fix): nothing to refuse
	}
	assert.Zero(t, d.Find(`[data-testid="approve"]`).Length(), "approve offered for %d items of which the page shows %d", n, shown)

	resp := b.Do(t, approver, "POST", path+"/approve", url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}}, nil)
	assert.Equal(t, http.StatusConflict, resp.Status, "approved %d items after reading %d", n, shown)
	r, err := b.Replays.Request(t.Context(), req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, r.Status)
}
