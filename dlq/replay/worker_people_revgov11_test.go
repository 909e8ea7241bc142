package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// approver3 is a third approver of acme, for the tests below.
var approver3 = quarantine.Actor{Issuer: "https://idp.example", Subject: "approver3", Email: "a3@example.com"}

// approvedPastAnExpiredApproval makes a manual request (two approvers)
// that approver3 approves first; their approval expires (the class's
// approval_expiry, 4h, passes) before approver1 and approver2 approve it.
// The request is approved by approver1 and approver2: approver3's
// approval counted for nothing (judgeApprovals: "expired"). It returns
// the request and its dead letter.
func approvedPastAnExpiredApproval(t *testing.T, b *replayBundle, msgID string) (replay.Request, int64) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: approver3, Groups: []string{"quarantine:acme:approver"}}))
	id := b.seedItem(t, "orders.refund", msgID, nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, 2, req.ApprovalsNeeded)
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	d, err := b.replays.Approve(ctx, req.ID, approver3, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Equal(t, 1, d.ApprovalsHave)

	// Five hours pass (manual's approval_expiry is 4h): the request and
	// approver3's approval are dated back by as much.
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_requests SET submitted_at = submitted_at - interval '5 hours' WHERE id = $1`, req.ID)
	require.NoError(t, err)
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_approvals SET approved_at = approved_at - interval '5 hours'
        WHERE request_id = $1 AND approver_subject = $2`, req.ID, approver3.Subject)
	require.NoError(t, err)
	d, err = b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Equal(t, 1, d.ApprovalsHave, "approver3's approval expired: only approver1's counts")
	d, err = b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready, "approver1 and approver2 complete it")
	require.Equal(t, 2, d.ApprovalsHave)
	return req, id
}

// TestRevGov11WorkerCountsExpiredApprovalTowardsTwoPeople: separation of
// duties at execution is meant to count as the approval did
// (judgeRunPeople: "as judgeApprovals counts at approval"). Here the
// request was approved by approver1 and approver2; approver3's approval
// had expired and counted for nothing. Before the worker publishes,
// approver2's identity takes approver1's email (a refresh records it):
// the approvals that counted now come from one person, and the request
// needed two. The worker counts every approval that is not void, the
// expired one among them, finds two people (approver3 and approver1) and
// publishes a manual item on what is, by the rule the approval used, one
// person's word.
func TestRevGov11WorkerCountsExpiredApprovalTowardsTwoPeople(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "revgov11-expired-counts"
	req, id := approvedPastAnExpiredApproval(t, b, msgID)
	// The same without approver3's approval, for comparison: blocked.
	control := b.seedItem(t, "orders.refund", msgID+"-control", nil, "{}")
	creq := b.request(t, []int64{control}, replay.SubmitInput{})
	cin := replay.ApproveInput{IntentHex: creq.IntentHex(), Confirmation: "REPLAY " + msgID + "-control"}
	for _, a := range []quarantine.Actor{approver1, approver2} {
		_, err := b.replays.Approve(ctx, creq.ID, a, cin, quarantine.RequestMeta{})
		require.NoError(t, err)
	}

	now2 := approver2
	now2.Email, now2.EmailVerified = approver1.Email, true
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: now2, Groups: []string{"quarantine:acme:approver"}}))

	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond})
	cj := b.rerun(t, w, creq.ID, control)
	require.Equal(t, "blocked", cj.State, "approver1 and approver2 are one person now: %s", cj.Result)
	j := b.rerun(t, w, req.ID, id)
	assert.Equal(t, "blocked", j.State, "the approvals that counted come from one person now (%s)", j.Result)
	assert.Zero(t, b.publishedAs(t, msgID), "a two-approver item published on one person's counted approvals and an expired one")
}

// TestRevGov11WorkerBlocksOnApproverWhoseApprovalNeverCounted: the same
// request, approved by approver1 and approver2, both of whom still hold
// the right. approver3, whose approval expired before the request was
// approved and counted for nothing, leaves the approvers' group. The
// worker asks every approver that is not void whether they still may
// approve, approver3 too, and blocks the request ("the approver
// a3@example.com no longer may approve"): a request whose counted
// approvers all hold the right is refused for someone whose word it never
// rested on (and it cannot be approved again: request again).
func TestRevGov11WorkerBlocksOnApproverWhoseApprovalNeverCounted(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "revgov11-expired-blocks"
	req, id := approvedPastAnExpiredApproval(t, b, msgID)

	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: approver3})) // no group at their next refresh

	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond})
	j := b.rerun(t, w, req.ID, id)
	assert.Equal(t, "replayed", j.State, "blocked for an approval that never counted: %s", j.Result)
	assert.Equal(t, 1, b.publishedAs(t, msgID))
}

// TestRevGov11FirstApprovalPastItsExpiryStillStartsTheRequest: the policy
// file says approval_expiry is "how long after it was given an approval
// counts towards its request and lets the request start: past it ... an
// approved one that has not started is blocked". A manual request (4h):
// approver1 approved it five hours ago, approver2 two hours ago, which
// completed it; nothing of it has been published. approver1's approval
// was given longer ago than the expiry, so it no longer lets the request
// start, and the request should be blocked ("request again"). The worker
// measures the expiry from when the request was approved (the second
// approval), so a two-approver request may start up to twice the expiry
// after its first approver looked at it: here it publishes on an approval
// five hours old.
func TestRevGov11FirstApprovalPastItsExpiryStillStartsTheRequest(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "revgov11-first-approval-old"
	id := b.seedItem(t, "orders.refund", msgID, nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, 2, req.ApprovalsNeeded)
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	// approver1 approved three hours after the request was submitted ...
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_requests SET submitted_at = submitted_at - interval '6 hours' WHERE id = $1`, req.ID)
	require.NoError(t, err)
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_approvals SET approved_at = approved_at - interval '3 hours' WHERE request_id = $1`, req.ID)
	require.NoError(t, err)
	// ... approver2 within its four hours, which completes the request.
	d, err := b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready, "approver1's approval (3h old) still counts: the request is approved")
	// Two more hours pass before a worker claims it: approver1's approval
	// is five hours old, approver2's two.
	for _, q := range []string{
		`UPDATE replay_requests SET submitted_at = submitted_at - interval '2 hours', approved_at = approved_at - interval '2 hours' WHERE id = $1`,
		`UPDATE replay_approvals SET approved_at = approved_at - interval '2 hours' WHERE request_id = $1`,
		`UPDATE replay_jobs SET not_before = least(not_before, now()) WHERE request_id = $1`,
	} {
		_, err = b.db.OwnerPool.Exec(ctx, q, req.ID)
		require.NoError(t, err)
	}
	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond})
	j := b.rerun(t, w, req.ID, id)
	assert.Equal(t, "blocked", j.State, "approver1's approval, five hours old, let the request start (%s)", j.Result)
	assert.Zero(t, b.publishedAs(t, msgID))
}
