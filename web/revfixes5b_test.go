package web_test

import (
	"context"
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

// TestRevFixes5bApprovalsPageLapsedApprovalIsNotYours: the first of a
// manual request's two approvers signed off, and their approval then
// lapsed (older than the class's approval_expiry: it no longer counts,
// the count says 0 of 2, and Approve takes their approval again:
// replaypolicy.ApprovalLapsed). Their approvals page still says "you
// approved; waiting for another approver" (approvedBy counts any approval
// not voided, expired or not), so the approver who must sign again is
// told the request waits for someone else.
func TestRevFixes5bApprovalsPageLapsedApprovalIsNotYours(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, requester := b.SignIn(t, "acme:oncall")
	first, _ := b.SignIn(t, "acme:approver")
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{seed(t, b, "acme", "ledger.delete", "rf5b-led-1", nil)}, replay.SubmitInput{})
	require.Equal(t, 2, req.ApprovalsNeeded)
	phrase, err := b.Replays.ConfirmationFor(context.Background(), req.ID)
	require.NoError(t, err)
	approve := func() int {
		resp := b.Do(t, first, "POST", fmt.Sprintf("/replay/requests/%d/approve", req.ID), url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}, "confirmation": {phrase}}, nil)
		return resp.Status
	}
	require.Equal(t, http.StatusSeeOther, approve())

	// A month passes: the approval lapsed.
	_, err = b.DB.OwnerPool.Exec(context.Background(), `UPDATE replay_approvals SET approved_at = approved_at - interval '30 days' WHERE request_id = $1`, req.ID)
	require.NoError(t, err)

	mine := b.Do(t, first, "GET", "/approvals", nil, nil).Doc(t)
	require.Equal(t, "0 of 2", textOf(mine, `[data-testid="approval-count"]`), "the lapsed approval does not count")
	assert.Zero(t, mine.Find(`[data-testid="approval-yours"]`).Length(),
		"a lapsed approval is no approval: the page tells its approver %q", textOf(mine, `[data-testid="approval-yours"]`))

	// It is theirs to give again.
	assert.Equal(t, http.StatusSeeOther, approve(), "the approver approves again")
}

// TestRevFixes5bExpiredDraftIsNotSaidUnreplayable: a draft whose items
// can all be replayed, left for longer than the draft time to live, is
// voided by the sweeper ("draft expired"). Its page says of its approvals
// "None asked: nothing in this request can be replayed", and the replays
// page titles its Submitted "Nothing in it could be replayed" and its
// approvals "Nothing in it can be replayed, so no approver was asked"
// (views: Approvals.Void is set for every void request, whatever voided
// it): the requester reads that their messages cannot be replayed, when
// they only have to select them again.
func TestRevFixes5bExpiredDraftIsNotSaidUnreplayable(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, requester := b.SignIn(t, "acme:oncall")
	_, drafts := testfactory.Draft(t, b.Replays, requester.Actor, seed(t, b, "acme", "ledger.delete", "rf5b-led-2", nil))
	require.Len(t, drafts, 1)
	d := drafts[0]
	require.Equal(t, replay.StatusDraft, d.Status)
	require.Zero(t, d.SkippedCount, "its item can be replayed")

	_, err := b.DB.OwnerPool.Exec(context.Background(), `UPDATE replay_requests SET created_at = created_at - interval '2 days' WHERE id = $1`, d.ID)
	require.NoError(t, err)
	_, err = b.Replays.ExpireDrafts(context.Background())
	require.NoError(t, err)
	got, err := b.Replays.Request(context.Background(), d.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusVoid, got.Status, got.StatusReason)

	page := b.Do(t, client, "GET", fmt.Sprintf("/replay/requests/%d", d.ID), nil, nil).Doc(t)
	assert.NotContains(t, page.Find(`[data-testid="replay-approvals-not-needed"]`).Text(), "nothing in this request can be replayed",
		"the draft expired; its item can be replayed (status: %s)", textOf(page, `[data-testid="replay-status-reason"]`))
	list := b.Do(t, client, "GET", "/replay/requests", nil, nil).Doc(t)
	html, _ := list.Find(`[data-testid="replay-row-approvals"]`).First().Html()
	assert.NotContains(t, html, "Nothing in it can be replayed", "the replays page on an expired draft")
}
