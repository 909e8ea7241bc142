package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevGov14ManualTwoApprovalsOfOnePersonLinkedByAnOutsideAccount: one
// person, three accounts. approver1 (a1@example.com) approves a manual
// refund. Their partner account a1Mid was seen with a1@example.com and then
// with a1-mid@example.com; their GitHub account a1GH holds a1-mid@example.com.
// a1Mid never touched the request, so its addresses are not in the
// request's KnownAs (knownAsColumn reads only the requester's and the
// approvers' identities; asSeenBy only the actor's): a1GH's approval is
// counted as a second person's, and the two-approver request is approved
// on one person's word. personOf says a person is "everyone knownAs links
// them to"; the link that makes them one is left out of what is read.
func TestRevGov14ManualTwoApprovalsOfOnePersonLinkedByAnOutsideAccount(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)

	const msgID = "refund-revgov14-chain"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-14c"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	require.Equal(t, replay.StatusPendingApproval, req.Status)

	// The linking account: seen with approver1's address, then its own.
	mid := quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "a1-mid", Email: approver1.Email, EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: mid}))
	mid.Email = "a1-mid@example.com"
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: mid}))
	// The second approving account: the linking account's address.
	gh := quarantine.Actor{Issuer: "https://github.example", Subject: "a1-gh", Email: mid.Email, EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: gh, Groups: []string{"quarantine:acme:approver"}}))

	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	in := replay.ApproveInput{IntentHex: got.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err = b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)

	_, err = b.replays.Approve(ctx, req.ID, gh, in, quarantine.RequestMeta{})
	assert.Error(t, err, "approver1's second account (linked through a1Mid) approved as a second person")

	after, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, after.Status,
		"a manual request needs two distinct approvers; one person under two accounts approved it")
}

// TestRevGov14RequesterApprovesOwnRequestThroughAnOutsideAccount: the
// requester's side of the same gap. oncall requests a manual refund as
// oncall@example.com; their partner account was seen with
// oncall@example.com and then with oncall-mid@example.com; their GitHub
// account holds oncall-mid@example.com and the approver role. The GitHub
// account shares no address with oncall, and the partner account (the
// link) is no person of the request, so Approve takes it for someone else:
// the requester approves their own request.
func TestRevGov14RequesterApprovesOwnRequestThroughAnOutsideAccount(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)

	const msgID = "refund-revgov14-own"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-14o"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})

	mid := quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "oncall-mid", Email: oncall.Email, EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: mid}))
	mid.Email = "oncall-mid@example.com"
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: mid}))
	gh := quarantine.Actor{Issuer: "https://github.example", Subject: "oncall-gh", Email: mid.Email, EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: gh, Groups: []string{"quarantine:acme:approver"}}))

	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	_, err = b.replays.Approve(ctx, req.ID, gh, replay.ApproveInput{IntentHex: got.IntentHex(), Confirmation: "REPLAY " + msgID},
		quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err),
		"the requester's GitHub account, linked to them through their partner account, approved their request: %v", err)
}

// TestRevGov14EditForgetsTheLinkingApprover: the case gov13 fixed
// (TestFixGov13PersonLinkedThroughAThirdAccount: a lapsed approval of the
// linking account still links) comes back after a payload edit, which
// deletes the request's approvals and with them the linking account from
// the request's people (knownAsColumn reads replay_approvals). a1Mid,
// seen with a1@example.com and then a1-mid@example.com, approves; the
// requester edits the payload; approver1 (a1@example.com) and a1GH
// (a1-mid@example.com) then approve, and the manual request is approved
// on one person's two accounts.
func TestRevGov14EditForgetsTheLinkingApprover(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)
	approvers := []string{"quarantine:acme:approver"}

	const msgID = "refund-revgov14-edit-link"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-14e"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})

	mid := quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "a1-mid-e", Email: approver1.Email, EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: mid, Groups: approvers}))
	mid.Email = "a1-mid-e@example.com"
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: mid, Groups: approvers}))
	gh := quarantine.Actor{Issuer: "https://github.example", Subject: "a1-gh-e", Email: mid.Email, EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: gh, Groups: approvers}))

	approve := func(who quarantine.Actor) error {
		got, err := b.replays.Request(ctx, req.ID)
		require.NoError(t, err)
		_, err = b.replays.Approve(ctx, req.ID, who, replay.ApproveInput{IntentHex: got.IntentHex(), Confirmation: "REPLAY " + msgID},
			quarantine.RequestMeta{})
		return err
	}
	require.NoError(t, approve(mid))
	require.NoError(t, b.replays.EditPayload(ctx, req.ID, id, oncall, replay.PayloadEdit{Payload: []byte(`{"refund":"order-14e","amount":1}`),
		Reason: "the amount was missing"}, quarantine.RequestMeta{}))

	require.NoError(t, approve(approver1))
	err := approve(gh)
	assert.Error(t, err, "approver1's second account, linked through a1Mid (who approved before the edit), approved as a second person")
	after, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, after.Status, "a manual request approved on one person's two accounts")
}
