package web_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevApprovals30ListOnlyWhatThePersonMayOpen: a role given approve on
// replays but not read on dead letters (admin, with a policy line a DBA may
// add, docs/access.md) does not see acme's request waiting for approval on /approvals,
// nor the payload its edit shows, nor count it in the navigation: the
// request's approve is not found for them (the request locator's See is
// read on dead letters; its page needs that read anywhere), so it is none
// of theirs. Given
// read too, the same person sees it listed, with the edit, and counted.
func TestRevApprovals30ListOnlyWhatThePersonMayOpen(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	role := authz.RoleAdmin
	setPolicyLines(t, b, role, authz.ActApprove, authz.ReplayObject("*"))
	_, oncall := b.SignIn(t, "acme:oncall")
	client, u := b.SignIn(t, "acme:"+role)
	require.True(t, b.Access.Can(u, "acme", authz.ReplayObject("manual"), authz.ActApprove))
	require.False(t, b.Access.Can(u, "acme", authz.ObjDeadLetter, authz.ActRead))

	batch, drafts := testfactory.Draft(t, b.Replays, oncall.Actor, seed(t, b, "acme", "orders.refund", "rev30-approvals", nil))
	require.NoError(t, b.Replays.EditPayload(ctx, drafts[0].ID, firstItem(t, b, drafts[0].ID), oncall.Actor,
		replay.PayloadEdit{Payload: []byte(`{"rev30":"refund-secret-4711"}`), Reason: "the amount was wrong"}, quarantine.RequestMeta{}))
	phrase, err := b.Replays.ConfirmationFor(ctx, drafts[0].ID)
	require.NoError(t, err)
	reqs, err := b.Replays.Submit(ctx, batch, oncall.Actor, replay.SubmitInput{Reason: "refund again", Confirmations: map[int64]string{drafts[0].ID: phrase}},
		quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Equal(t, replay.StatusPendingApproval, reqs[0].Status)
	link := fmt.Sprintf(`href="/replay/requests/%d"`, reqs[0].ID)

	resp := b.Do(t, client, "GET", "/approvals", nil, nil)
	require.Equal(t, 200, resp.Status, resp.Body)
	assert.NotContains(t, resp.Body, link, "a request of a tenant whose dead letters they may not read is not listed")
	assert.NotContains(t, resp.Body, "refund-secret-4711", "nor the payload its edit shows")
	assert.Zero(t, resp.Doc(t).Find(`[data-testid="nav-approvals-count"]`).Length(), "nor counted")
	approve := b.Do(t, client, "POST", fmt.Sprintf("/replay/requests/%d/approve", reqs[0].ID),
		url.Values{"intent": {reqs[0].IntentHex()}, "version": {strconv.Itoa(reqs[0].Version)}, "confirmation": {phrase}}, nil)
	assert.Equal(t, 404, approve.Status, "its approve is not found for them, which is why it is not listed: %.300s", approve.Body)

	setPolicyLines(t, b, role, authz.ActRead, authz.ObjBindings, authz.ObjPolicy, authz.ObjDeadLetter) // the shipped two, and dead letters
	resp = b.Do(t, client, "GET", "/approvals", nil, nil)
	require.Equal(t, 200, resp.Status, resp.Body)
	assert.Contains(t, resp.Body, link, "with read, it is listed")
	assert.Contains(t, resp.Body, "refund-secret-4711", "with its edit")
	assert.Equal(t, "1", resp.Doc(t).Find(`[data-testid="nav-approvals-count"]`).Text(), "and counted")
}
