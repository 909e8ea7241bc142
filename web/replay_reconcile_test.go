package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestReconcileByAnotherPerson settles an item whose outcome nobody can
// know: the requester, even one who holds the reconcile permission, is not
// offered the form and is refused (403, audited as denied); an approver
// who did not request it settles it.
func TestReconcileByAnotherPerson(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	requester, requesterUser := b.SignIn(t, "acme:oncall", "acme:approver")
	approver, approverUser := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "search.index_update", "reconcile-1", nil)
	req := testfactory.Request(t, b.Replays, requesterUser.Actor, []int64{id}, replay.SubmitInput{Reason: "reindex"})
	testfactory.NeedsPerson(t, b.Pool, req.ID)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	assert.Zero(t, b.Do(t, requester, "GET", path, nil, nil).Doc(t).Find(`[data-testid="reconcile-form"]`).Length(),
		"the requester does not settle their own request's items")
	denied := b.AuditCount(t, "outcome = 'denied' AND action = 'replay.item.reconciled'")
	resp := b.Do(t, requester, "POST", fmt.Sprintf("%s/items/%d/reconcile", path, id), url.Values{"choice": {"applied"}, "note": {"looked"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status)
	assert.Equal(t, denied+1, b.AuditCount(t, "outcome = 'denied' AND action = 'replay.item.reconciled' AND actor_subject = $1", requesterUser.Subject))
	// The requester's other account (the same verified email) is the same person.
	twin, _ := b.SignInAs(t, testidp.Person{ID: "twin-of-requester", Email: requesterUser.Email, EmailVerified: true}, "acme:approver")
	assert.Zero(t, b.Do(t, twin, "GET", path, nil, nil).Doc(t).Find(`[data-testid="reconcile-form"]`).Length())
	resp = b.Do(t, twin, "POST", fmt.Sprintf("%s/items/%d/reconcile", path, id), url.Values{"choice": {"applied"}, "note": {"looked"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status)

	require.Equal(t, 1, b.Do(t, approver, "GET", path, nil, nil).Doc(t).Find(`[data-testid="reconcile-form"]`).Length())
	resp = b.Do(t, approver, "POST", fmt.Sprintf("%s/items/%d/reconcile", path, id),
		url.Values{"choice": {"applied"}, "note": {"the index holds doc reconcile-1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	assert.Equal(t, 1, b.AuditCount(t, "outcome = 'ok' AND action = 'replay.item.reconciled' AND actor_subject = $1", approverUser.Subject))
	r, err := b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusDone, r.Status)
}

// TestReconcileRepublishNotOfferedForTwoApproverClass: an item of a manual
// request (two approvers, neither the requester) that needs a person is
// offered applied and not applied (leave it), not "not applied,
// republish", and the page says why in one line: publishing it again is a
// new request with two approvals of its own. A crafted republish is
// refused with 422 on the page with that reason, audited as denied, and
// changes nothing. An item of a class without approvers keeps its
// republish button, and no such line.
func TestReconcileRepublishNotOfferedForTwoApproverClass(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	_, requester := b.SignIn(t, "acme:oncall")
	first, _ := b.SignIn(t, "acme:approver")
	second, secondUser := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "orders.refund", "refund-reconcile-1", nil)
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{id}, replay.SubmitInput{Reason: "the refund timed out"})
	require.Equal(t, 2, req.ApprovalsNeeded)
	phrase, err := b.Replays.ConfirmationFor(ctx, req.ID)
	require.NoError(t, err)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	for _, c := range []*http.Client{first, second} {
		resp := b.Do(t, c, "POST", path+"/approve", url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}, "confirmation": {phrase}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	}
	testfactory.NeedsPerson(t, b.Pool, req.ID)
	const why = "Republishing an item that needed two approvers takes a new request with two approvals of its own: leave it, then request it again."

	page := b.Do(t, second, "GET", path, nil, nil).Doc(t)
	require.Equal(t, 1, page.Find(`[data-testid="reconcile-form"]`).Length())
	assert.Equal(t, 1, page.Find(`[data-testid="reconcile-applied"]`).Length())
	assert.Equal(t, 1, page.Find(`[data-testid="reconcile-not-applied"]`).Length())
	assert.Zero(t, page.Find(`[data-testid="reconcile-republish"]`).Length(), "no republish on one approver's word")
	assert.Equal(t, why, textOf(page, `[data-testid="reconcile-no-republish"]`))

	denied := b.AuditCount(t, "outcome = 'denied' AND action = 'replay.item.reconciled'")
	resp := b.Do(t, second, "POST", fmt.Sprintf("%s/items/%d/reconcile", path, id),
		url.Values{"choice": {"republish"}, "note": {"the payments service has no refund"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	refused := resp.Doc(t)
	assert.Contains(t, textOf(refused, `[data-testid="reconcile-error"]`), "takes a new request with two approvals of its own",
		"the page comes back with the reason beside the form")
	assert.Zero(t, refused.Find(`[data-testid="reconcile-republish"]`).Length())
	assert.Zero(t, refused.Find(`[data-testid="reconcile-no-republish"]`).Length(), "the error says it; not twice beside the form")
	assert.Equal(t, denied+1, b.AuditCount(t, "outcome = 'denied' AND action = 'replay.item.reconciled' AND actor_subject = $1", secondUser.Subject))
	assert.Zero(t, b.AuditCount(t, "outcome = 'ok' AND action = 'replay.item.reconciled'"), "nothing settled")
	var state string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT state FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&state))
	assert.Equal(t, "needs_reconciliation", state)
	r, err := b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusDoneWithProblems, r.Status)

	// A class that needs no approver keeps its republish.
	other := seed(t, b, "acme", "search.index_update", "reconcile-rebuild-1", nil)
	easy := testfactory.Request(t, b.Replays, requester.Actor, []int64{other}, replay.SubmitInput{Reason: "reindex"})
	testfactory.NeedsPerson(t, b.Pool, easy.ID)
	page = b.Do(t, second, "GET", fmt.Sprintf("/replay/requests/%d", easy.ID), nil, nil).Doc(t)
	assert.Equal(t, 1, page.Find(`[data-testid="reconcile-republish"]`).Length())
	assert.Zero(t, page.Find(`[data-testid="reconcile-no-republish"]`).Length())
}
