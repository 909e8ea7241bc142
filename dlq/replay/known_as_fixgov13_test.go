package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestFixGov13RequesterEditedUnderAnotherAddress: the address the
// requester edits a payload under is one they are known by from then on
// (identity_addresses), as the ones they draft and submit under. oncall
// requests a refund as oncall@example.com, edits its payload as
// oncall-e@example.com (a session the directory never heard of), and is
// oncall-f@example.com now; the person's second identity holds
// oncall-e@example.com and may not approve.
func TestFixGov13RequesterEditedUnderAnotherAddress(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)

	const msgID = "refund-fixgov13-edit-as"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-13e"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	asE := oncall
	asE.Email = "oncall-e@example.com"
	require.NoError(t, b.replays.EditPayload(ctx, req.ID, id, asE, replay.PayloadEdit{Payload: []byte(`{"refund":"order-13e","amount":1}`),
		Reason: "the amount was missing"}, quarantine.RequestMeta{}))
	asF := oncall
	asF.Email, asF.EmailVerified = "oncall-f@example.com", true
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: asF, Groups: []string{"quarantine:acme:oncall"}}))
	second := quarantine.Actor{Issuer: "https://github.example", Subject: "oncall-gh", Email: asE.Email, EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: second, Groups: []string{"quarantine:acme:approver"}}))

	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	_, err = b.replays.Approve(ctx, req.ID, second, replay.ApproveInput{IntentHex: got.IntentHex(), Confirmation: "REPLAY " + msgID},
		quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "the requester's second identity, holding the address of an edit: %v", err)
}

// TestFixGov13ActorSeenWithTheRequestersAddress: the actor is the person
// behind every address the console has seen their identity with, on
// every path that judges them: approving, rejecting, settling, the request
// page and the navigation's count. oncall requests as oncall@example.com;
// a second identity of the person signed in once with that address and
// is y-new@example.com now, in the directory and in its session.
func TestFixGov13ActorSeenWithTheRequestersAddress(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)

	const msgID = "refund-fixgov13-actor-was"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-13y"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	groups := []string{"quarantine:acme:approver"}
	// Unverified: an address seen verified would link y to the request's
	// requester from the request's side (its KnownAs reads every identity
	// linked to its people through verified addresses, revgov14), and the
	// preconditions below would not hold; claimed, it counts only as y's
	// own name, which is what every path must judge y with.
	was := quarantine.Actor{Issuer: "https://github.example", Subject: "y", Email: oncall.Email}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: was, Groups: groups}))
	y := was
	y.Email = "y-new@example.com"
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: y, Groups: groups}))

	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	now, err := b.replays.IdentityNow(ctx, y)
	require.NoError(t, err)
	require.Equal(t, replaypolicy.Go, got.MayApprove(y, quarantine.Actor{}).Outcome, "precondition: as signed in, another person")
	require.Equal(t, replaypolicy.Go, got.MayReconcile(y, now).Outcome, "precondition: as the directory has them now, another person")
	known, err := b.replays.KnownAs(ctx, y)
	require.NoError(t, err)
	assert.Equal(t, replaypolicy.Block, got.SeenBy(known).MayApprove(y, now).Outcome, "the approvals page marks it their own")
	assert.Equal(t, replaypolicy.Block, got.SeenBy(known).MayReconcile(y, now).Outcome, "the pages offer no settle")

	v, err := b.replays.View(ctx, req.ID, y, replay.ViewOptions{Items: 10})
	require.NoError(t, err)
	assert.False(t, v.Reviewer, "the request page offers a review")
	assert.False(t, v.Decision.ActorCanApprove, "the request page offers an approval")
	n, err := b.replays.Awaiting(ctx, []replay.ClassScope{{Class: replaypolicy.Manual, All: true}}, y, 5)
	require.NoError(t, err)
	assert.Zero(t, n, "the navigation counts it as waiting for them")

	_, err = b.replays.Approve(ctx, req.ID, y, replay.ApproveInput{IntentHex: got.IntentHex(), Confirmation: "REPLAY " + msgID}, quarantine.RequestMeta{})
	// Refused (invalid: only their own account's other address makes
	// them the requester, the page says why), audited as denied.
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "approve: %v", err)
	err = b.replays.Reject(ctx, req.ID, y, replay.RejectInput{IntentHex: got.IntentHex(), Version: got.Version, Reason: "not needed"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "reject: %v", err)
	err = b.replays.Reconcile(ctx, req.ID, id, y, replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "checked"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "settle: %v", err)

	// Someone else is judged as before.
	_, err = b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: got.IntentHex(), Confirmation: "REPLAY " + msgID},
		quarantine.RequestMeta{})
	assert.NoError(t, err)
}
