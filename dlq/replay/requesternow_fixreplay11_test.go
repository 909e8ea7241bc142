package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// selfFixedByNewAddress records, as the on-call's second identity, a fix
// of item type search.index_update in place after dead letter id, and
// returns the on-call as the directory will have them once moveAddress
// has run: their provider then says the second identity's address, so the
// fix marker is the requester's own (replaypolicy.MayBeOne).
func selfFixedByNewAddress(t *testing.T, b *replayBundle, id int64, subject, email string) (moveAddress func(), oncallNow quarantine.Actor) {
	t.Helper()
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)
	second := quarantine.Actor{Issuer: "https://github.example", Subject: subject, Email: email, EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: second, Groups: []string{"quarantine:acme:oncall"}}))
	_, err := b.store.RecordFix(ctx, id, dlq.FixInput{Scope: dlq.FixItemType, FixedAt: time.Now().Add(-time.Minute), Ref: "v9.9.9"},
		second, quarantine.RequestMeta{}, time.Now())
	require.NoError(t, err)
	oncallNow = oncall
	oncallNow.Email, oncallNow.EmailVerified = email, true
	return func() {
		require.NoError(t, dir.Remember(ctx, authz.User{Actor: oncallNow, Groups: []string{"quarantine:acme:oncall"}}))
	}, oncallNow
}

// TestFixReplay11SubmitWeighsSelfFixedItemWithRequesterNow: Submit's
// approval-free path judged the draft (read by batchRequests) with the
// requester only as the draft recorded them. A schema_invalid item let in
// by a fix the on-call's second identity recorded, whose address the
// on-call's identity holds by the time they submit, is the requester's
// own fix: the request waits for one approver who is not them, as
// Decision and the worker judge it, instead of being approved at once on
// their word alone. The selection page (Selection's OnSubmit) says so
// before the press, as the submit then does.
func TestFixReplay11SubmitWeighsSelfFixedItemWithRequesterNow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "submit-selffix-now",
		Class: "schema_invalid", Payload: []byte(`{"doc":1}`), At: time.Now().Add(-time.Hour)})
	move, oncallNow := selfFixedByNewAddress(t, b, id, "oncall-gh-submit", "oncall-submit@example.com")
	batch, drafts := b.draft(t, oncall, id)
	require.Len(t, drafts, 1)
	require.Equal(t, 1, drafts[0].ItemCount, "precondition: the fix lets the item in")
	move()

	sel, err := b.replays.Selection(ctx, batch, oncallNow, 20)
	require.NoError(t, err)
	require.Len(t, sel.Requests, 1)
	assert.Equal(t, "search.index_update", sel.Requests[0].OnSubmit.SelfFixed, "the selection page says the fix is the requester's own")
	assert.Equal(t, 1, sel.Requests[0].OnSubmit.Approvals)

	reqs, err := b.replays.Submit(ctx, batch, oncallNow, replay.SubmitInput{Reason: "reindex"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	assert.Equal(t, replay.StatusPendingApproval, reqs[0].Status,
		"approved on the requester's word, whose own fix marker (as the directory has them now) lets the item in: %s", reqs[0].StatusReason)
	assert.Equal(t, 1, reqs[0].ApprovalsNeeded)
	d, err := b.replays.Decision(ctx, reqs[0].ID, approver1)
	require.NoError(t, err)
	assert.Contains(t, d.Reason, "was recorded by the requester")
}

// TestFixReplay11ListCountsApprovalsWithRequesterNow: the replays page
// (List) counted a request's approvals with its requester only as the
// request recorded them, so an approval by the identity whose address the
// requester's holds now counted there ("1 of 2") while the request page,
// Approve and the worker ignore it ("0 of 2").
func TestFixReplay11ListCountsApprovalsWithRequesterNow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "orders.refund", "list-now", nil, `{}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, 2, req.ApprovalsNeeded)
	verified := approver1
	verified.EmailVerified = true
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: verified, Groups: []string{"quarantine:acme:approver"}}))
	_, err := b.replays.Approve(ctx, req.ID, verified, replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY list-now"},
		quarantine.RequestMeta{})
	require.NoError(t, err)
	nowOncall := oncall
	nowOncall.Email, nowOncall.EmailVerified = approver1.Email, true
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: nowOncall, Groups: []string{"quarantine:acme:oncall"}}))

	v, err := b.replays.View(ctx, req.ID, approver2, replay.ViewOptions{})
	require.NoError(t, err)
	require.Equal(t, 0, v.Count.Have, "precondition: the request page ignores the approval (the requester's, now)")
	listed, _, err := b.replays.List(ctx, replay.ListFilter{Tenants: []string{"acme"}, Viewer: approver2, Limit: 50})
	require.NoError(t, err)
	found := false
	for _, l := range listed {
		if l.ID == req.ID {
			found = true
			assert.Equal(t, v.Count.String(), l.Count.String(), "the replays page and the request page count the approvals alike")
		}
	}
	assert.True(t, found)
}
