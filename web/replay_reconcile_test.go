package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/oauth2-proxy/mockoidc"
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
	twin, _ := b.SignInAs(t, &mockoidc.MockUser{Subject: "twin-of-requester", Email: requesterUser.Email, EmailVerified: true}, "acme:approver")
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
