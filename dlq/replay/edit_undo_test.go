package replay_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// lastEditAudit is the after of the last replay.edit_payload entry that
// succeeded.
func lastEditAudit(t *testing.T, b *replayBundle) map[string]any {
	t.Helper()
	var raw []byte
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT after FROM audit_log
        WHERE action = 'replay.edit_payload' AND outcome = 'ok' ORDER BY seq DESC LIMIT 1`).Scan(&raw))
	var after map[string]any
	require.NoError(t, json.Unmarshal(raw, &after))
	return after
}

// TestEditUndoneInADraftIsJudgedAsDrafted: a schema_invalid item, left out
// of its draft until edited, is edited (it goes), then the edit is undone
// (PayloadEdit.Undo): the item holds the payload received again, is left
// out again as the draft left it (error-class-fix, saying why), the
// request is no longer edited, and the undo is audited. It may be edited
// again.
func TestEditUndoneInADraftIsJudgedAsDrafted(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	received := []byte(`{"doc":"undo-1"}`)
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "undo-draft", Class: "schema_invalid", Payload: received})
	_, drafts := b.draft(t, oncall, id)
	draft := drafts[0].ID
	items, err := b.replays.Items(ctx, draft, 1)
	require.NoError(t, err)
	require.Equal(t, replaypolicy.CheckNeedsFix, items[0].Check, "left out until edited")

	require.NoError(t, b.replays.EditPayload(ctx, draft, id, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":"undo-1","v":2}`), Reason: "v2"},
		quarantine.RequestMeta{}))
	items, err = b.replays.Items(ctx, draft, 1)
	require.NoError(t, err)
	require.Empty(t, items[0].SkipReason, "the edit lets it go")

	change, err := b.replays.ChangePayload(ctx, draft, id, oncall, replay.PayloadEdit{Undo: true, Reason: "wrong item"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.True(t, change.Undone)
	assert.Contains(t, change.LeftOut, "schema_invalid", "why the draft leaves it out without the edit")
	items, err = b.replays.Items(ctx, draft, 1)
	require.NoError(t, err)
	assert.False(t, items[0].Edited)
	assert.Empty(t, items[0].EditReason)
	sum := sha256.Sum256(received)
	assert.Equal(t, sum[:], items[0].PayloadSHA256)
	assert.Equal(t, replaypolicy.CheckNeedsFix, items[0].Check, "left out again, as drafted")
	req, err := b.replays.Request(ctx, draft)
	require.NoError(t, err)
	assert.False(t, req.PayloadEdited)
	assert.Equal(t, 0, req.ItemCount)
	after := lastEditAudit(t, b)
	assert.Equal(t, true, after["undone"])
	assert.NotEmpty(t, after["left_out"])

	_, err = b.replays.ChangePayload(ctx, draft, id, oncall, replay.PayloadEdit{Undo: true, Reason: "again"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "no edit left to undo")
	assert.Contains(t, quarantine.ErrorMessage(err), "holds it as received: nothing was edited")
	require.NoError(t, b.replays.EditPayload(ctx, draft, id, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":"undo-1","v":3}`), Reason: "v3"},
		quarantine.RequestMeta{}), "edited again, it goes again")
}

// TestEditUndoneWaitingForApproval: an edit of a rebuildable request made
// it wait for an approver; pasting the payload received back undoes it:
// the request is no longer edited, its class asks for no approval, so it
// is approved as its submit would have approved it, and publishes the
// payload received, unmarked.
func TestEditUndoneWaitingForApproval(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	received := `{"doc":"sku-9"}`
	id := b.seedItem(t, "search.index_update", "undo-pending", nil, received)
	batch, drafts := b.draft(t, oncall, id)
	require.NoError(t, b.replays.EditPayload(ctx, drafts[0].ID, id, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":"sku-10"}`), Reason: "wrong sku?"},
		quarantine.RequestMeta{}))
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	req := reqs[0]
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	require.Equal(t, 1, req.ApprovalsNeeded)

	change, err := b.replays.ChangePayload(ctx, req.ID, id, oncall, replay.PayloadEdit{Payload: []byte(received), Reason: "the sku was right"},
		quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.Equal(t, replay.PayloadChange{Undone: true, Approved: true}, change)
	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.False(t, got.PayloadEdited)
	assert.Equal(t, 0, got.ApprovalsNeeded, "a rebuildable request needs no approver for an edit it no longer holds")
	assert.Equal(t, replay.StatusApproved, got.Status, "approved as its submit would have approved it")
	assert.NotEqual(t, req.IntentHex(), got.IntentHex(), "a new intent")
	assert.Equal(t, 1, auditCount(t, b, `action = 'replay.approved' AND reason LIKE 'no approval needed once the payload edit was undone%'`))

	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	msgs := b.published(t)
	require.Contains(t, msgs, "undo-pending")
	assert.Equal(t, received, string(msgs["undo-pending"].Data), "the payload received")
	assert.Empty(t, msgs["undo-pending"].Header.Get(replay.HeaderPayloadEdited), "not marked edited")
}

// TestEditUndoneWaitingForApprovalKeepsAnEditTheItemNeeds: a schema_invalid
// item goes only edited; in a request waiting for approval, undoing its
// edit is refused (invalid, saying why and how to drop it), and the item
// keeps the edit: a request's items are not left out after its submit.
func TestEditUndoneWaitingForApprovalKeepsAnEditTheItemNeeds(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "undo-needed", Class: "schema_invalid",
		Payload: []byte(`{"doc":"bad"}`)})
	batch, drafts := b.draft(t, oncall, id)
	edited := []byte(`{"doc":"good"}`)
	require.NoError(t, b.replays.EditPayload(ctx, drafts[0].ID, id, oncall, replay.PayloadEdit{Payload: edited, Reason: "fix the schema"}, quarantine.RequestMeta{}))
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	req := reqs[0]
	require.Equal(t, replay.StatusPendingApproval, req.Status)

	_, err = b.replays.ChangePayload(ctx, req.ID, id, oncall, replay.PayloadEdit{Undo: true, Reason: "oops"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
	assert.Contains(t, quarantine.ErrorMessage(err), "so it keeps the edit")
	assert.Contains(t, quarantine.ErrorMessage(err), "cancel the request")
	items, err := b.replays.Items(ctx, req.ID, 1)
	require.NoError(t, err)
	sum := sha256.Sum256(edited)
	assert.Equal(t, sum[:], items[0].PayloadSHA256, "the edit stands")
	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, req.IntentHex(), got.IntentHex())
}
