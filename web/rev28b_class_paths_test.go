package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevPath28RequesterWithoutTheClassCannotCancel: on-call's cancel
// line is "replay:rebuildable cancel" only (the cancel route's gate lets
// them through on that class). Their own manual request, pending
// approval, is not theirs to cancel: the cancel is forbidden, audited as
// denied with the class it needs, and the request still waits for its
// approvers. The replay rules only ask "is it the requester's own
// request": the handler's class check is the one rule on this path.
func TestRevPath28RequesterWithoutTheClassCannotCancel(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	setPolicyLines(t, b, authz.RoleOncall, authz.ActCancel, authz.ReplayObject("rebuildable"))
	oncall, requester := b.SignIn(t, "acme:oncall")
	refund := seed(t, b, "acme", "orders.refund", "rev28b-cancel-class", nil)
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{refund}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	require.NotEqual(t, "rebuildable", string(req.Class), "the request is of a class the line does not name")

	resp := b.Do(t, oncall, "POST", fmt.Sprintf("/replay/requests/%d/cancel", req.ID),
		url.Values{"reason": {"changed my mind"}, "confirmed": {"1"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "cancelling a %s request with a rebuildable cancel line only", req.Class)

	got, err := b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, got.Status, "the request was not cancelled")
	assert.Zero(t, b.AuditCount(t, "action = 'replay.cancel' AND object_id = $1", fmt.Sprint(req.ID)), "no cancel was recorded")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'authz.denied' AND actor_subject = $1 AND reason LIKE $2", requester.Subject,
		"needs "+authz.ReplayObject(string(req.Class))+":cancel for %"), "the refused cancel is audited")
}
