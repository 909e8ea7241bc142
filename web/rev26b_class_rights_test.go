package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevRequest26ApproverOfOneClassCannotApproveOrRejectAnother: an
// approver whose only lines are "replay:same_operation approve" and
// "replay:same_operation reject" passes the gates of the approve and
// reject routes (they let anyone through who holds the action on some
// class), and the handlers refuse a request of another class: approving
// or rejecting a manual request is forbidden, audited as denied, and
// changes nothing (no approval, the request still waits). The class
// permission test only showed the approver approving the class they
// hold: with the handlers' class check gone every test passed.
func TestRevRequest26ApproverOfOneClassCannotApproveOrRejectAnother(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	setPolicyLines(t, b, authz.RoleApprover, authz.ActApprove, authz.ReplayObject("same_operation"))
	setPolicyLines(t, b, authz.RoleApprover, authz.ActReject, authz.ReplayObject("same_operation"))
	_, requester := b.SignIn(t, "acme:oncall")
	approver, approverUser := b.SignIn(t, "acme:approver")
	refund := seed(t, b, "acme", "orders.refund", "rev26b-class-refund", nil)
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{refund}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	phrase, err := b.Replays.ConfirmationFor(ctx, req.ID)
	require.NoError(t, err)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	resp := b.Do(t, approver, "POST", path+"/approve", url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}, "confirmation": {phrase}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "approving a manual request with same_operation rights only")
	resp = b.Do(t, approver, "POST", path+"/reject", url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}, "reason": {"not mine to judge"}, "confirmed": {"1"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "rejecting a manual request with same_operation rights only")

	var approvals int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_approvals WHERE request_id = $1`, req.ID).Scan(&approvals))
	assert.Zero(t, approvals, "no approval was recorded")
	got, err := b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, got.Status, "the request still waits for an approver of its class")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'authz.denied' AND actor_subject = $1 AND reason LIKE $2", approverUser.Subject,
		"needs replay:manual:approve for %"), "the approve refused is audited")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'authz.denied' AND actor_subject = $1 AND reason LIKE $2", approverUser.Subject,
		"needs replay:manual:reject for %"), "the reject refused is audited")
}

// TestRevRequest26RequesterWhoLostTheClassCannotSubmitOrEdit: on-call
// drafts a rebuildable replay while holding "replay:rebuildable request";
// then their lines change to "replay:dedupe request" only (the gates of
// the confirm and edit routes still let them through, on another class).
// Submitting the draft and editing its payload are both forbidden, and
// nothing changes: the draft stays a draft with its payload as received,
// and nothing is requested.
func TestRevRequest26RequesterWhoLostTheClassCannotSubmitOrEdit(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	setPolicyLines(t, b, authz.RoleOncall, authz.ActRequest, authz.ReplayObject("rebuildable"))
	oncall, _ := b.SignIn(t, "acme:oncall")
	doc := seed(t, b, "acme", "search.index_update", "rev26b-lost-class", nil)
	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(doc)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := resp.Header.Get("Location")
	var id int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id FROM replay_requests WHERE batch = $1`, strings.TrimPrefix(confirm, "/replay/batches/")).Scan(&id))
	draft, err := b.Replays.Request(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 1, draft.ItemCount, "drafted while the line allowed it")

	setPolicyLines(t, b, authz.RoleOncall, authz.ActRequest, authz.ReplayObject("dedupe"))
	resp = b.Do(t, oncall, "POST", fmt.Sprintf("/replay/requests/%d/items/%d/payload", draft.ID, doc),
		url.Values{"payload": {`{"x":2}`}, "reason": {"schema fix"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "editing a rebuildable draft without the class")
	resp = b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"indexer fixed"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "submitting a rebuildable draft without the class")

	got, err := b.Replays.Request(ctx, draft.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusDraft, got.Status, "nothing was requested")
	assert.False(t, got.PayloadEdited, "nothing was edited")
	d, err := dlq.NewStore(b.Pool).Get(ctx, doc)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusQuarantined, d.Status)
}
