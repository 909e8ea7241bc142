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
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevReplay11UndoApprovesSelfFixedItemWithoutRequesterNow: undoing a
// payload edit of a request waiting for approval approves it at once when
// the rules need nothing more of it (approveIfReady -> approvedOnUndo). That
// judgement reads the request with getRequest and never fills RequesterNow,
// so FixedByRequester (and MayBeOne in Require) compare the fix marker's
// recorder only with the requester as the request recorded them. Every other
// path (Approve, Reject, Reconcile, View, Awaiting, Decision, the worker's
// JudgeItem) compares the requester as the directory has them now too.
//
// The on-call edits a schema_invalid rebuildable item (the edit lets it go;
// it needs one approver) and submits. Their second identity records a fix
// of the item type; the on-call's own address then becomes that identity's
// (a refresh records it). The fix marker is now the requester's own:
// Decision says the request waits for an approver who is not them. Undoing
// the edit nonetheless approves the request on the requester's word alone
// ("no approval needed once the payload edit was undone") and writes its
// jobs; the worker then blocks them (FixedByRequester at execution), so the
// request shows approved though the rules never let it be. The request page
// (View, which reads RequesterNow) says the undo does not approve it: the
// page and the undo, said to be one judgement, disagree.
func TestRevReplay11UndoApprovesSelfFixedItemWithoutRequesterNow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)

	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "undo-selffix",
		Class: "schema_invalid", Payload: []byte(`{"doc":1}`), At: time.Now().Add(-time.Hour)})

	batch, drafts := b.draft(t, oncall, id)
	require.Len(t, drafts, 1)
	reqID := drafts[0].ID
	require.NoError(t, b.replays.EditPayload(ctx, reqID, id, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":2}`), Reason: "schema fixed by hand"},
		quarantine.RequestMeta{}))
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	require.Equal(t, replay.StatusPendingApproval, reqs[0].Status, "precondition: the edit needs an approver")

	// The on-call's second identity (another mailbox then) records the fix.
	second := quarantine.Actor{Issuer: "https://github.example", Subject: "oncall-gh", Email: "oncall-new@example.com", EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: second, Groups: []string{"quarantine:acme:oncall"}}))
	_, err = b.store.RecordFix(ctx, id, dlq.FixInput{Scope: dlq.FixItemType, FixedAt: time.Now().Add(-time.Minute), Ref: "v9.9.9"},
		second, quarantine.RequestMeta{}, time.Now())
	require.NoError(t, err)

	// The on-call's provider now says the second identity's address.
	oncallNow := oncall
	oncallNow.Email, oncallNow.EmailVerified = second.Email, true
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: oncallNow, Groups: []string{"quarantine:acme:oncall"}}))
	require.True(t, replaypolicy.SamePerson(oncallNow, second), "precondition: the fix's recorder is the requester as the directory has them now")

	// The request page (View reads RequesterNow) says what the undo does.
	v, err := b.replays.View(ctx, reqID, oncallNow, replay.ViewOptions{Items: 100, Payloads: 20, Edits: 20})
	require.NoError(t, err)
	require.Contains(t, v.Undo, id)
	promised := v.Undo[id].Approves

	change, err := b.replays.ChangePayload(ctx, reqID, id, oncallNow, replay.PayloadEdit{Undo: true, Reason: "the fix is deployed"}, quarantine.RequestMeta{})
	if err == nil {
		assert.False(t, change.Approved, "undoing the edit approved, with no approver, a request whose only standing is a fix marker its requester recorded")
		assert.Equal(t, promised, change.Approved, "the page (View, with RequesterNow) and the undo (approvedOnUndo, without) are said to be one judgement")
	}
	r, err := b.replays.Request(ctx, reqID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, r.Status,
		"the request must wait for an approver who is not the requester (the fix marker is theirs, as the directory has them now); it is %s: %s", r.Status, r.StatusReason)
}
