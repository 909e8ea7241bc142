package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestEditThatLeavesTheItemOutIsNotKept: a schema_invalid revalidate item
// without its principal is left out of its draft for the missing
// principal (a rule no edit satisfies, judged before its error class's),
// and is no item an edit is taken for (not found): nothing of an edit is
// kept, the item holds none, and the draft is not edited.
func TestEditThatLeavesTheItemOutIsNotKept(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "accounts.permission_grant", MsgID: "grant-np",
		Class: "schema_invalid", Payload: []byte(`{"grant":"x"}`)})
	_, drafts := b.draft(t, oncall, id)
	draft := drafts[0].ID

	items, err := b.replays.Items(ctx, draft, 1)
	require.NoError(t, err)
	assert.Equal(t, replaypolicy.CheckNoPrincipal, items[0].Check, "left out for the rule no edit satisfies")
	assert.Contains(t, items[0].SkipReason, "Dlq-Principal")

	err = b.replays.EditPayload(ctx, draft, id, oncall, replay.PayloadEdit{Payload: []byte(`{"grant":"fixed"}`), Reason: "fix schema"}, quarantine.RequestMeta{})
	require.Equal(t, quarantine.ENOTFOUND, quarantine.ErrorCode(err), "%v", err)

	items, err = b.replays.Items(ctx, draft, 1)
	require.NoError(t, err)
	assert.Equal(t, replaypolicy.CheckNoPrincipal, items[0].Check, "left out as drafted")
	assert.False(t, items[0].Edited)
	req, err := b.replays.Request(ctx, draft)
	require.NoError(t, err)
	assert.False(t, req.PayloadEdited, "no approver is needed for an edit not kept")
	assert.Zero(t, auditCount(t, b, `action = 'replay.edit_payload' AND outcome = 'ok'`))
}

// TestUndoWithoutReasonSaysSo: an undo without a reason is refused in its
// own words, not as a payload change.
func TestUndoWithoutReasonSaysSo(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "undo-noreason", nil, `{"doc":1}`)
	_, drafts := b.draft(t, oncall, id)
	require.NoError(t, b.replays.EditPayload(ctx, drafts[0].ID, id, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":2}`), Reason: "v2"}, quarantine.RequestMeta{}))
	_, err := b.replays.ChangePayload(ctx, drafts[0].ID, id, oncall, replay.PayloadEdit{Undo: true, Reason: " "}, quarantine.RequestMeta{})
	require.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err))
	assert.Contains(t, quarantine.ErrorMessage(err), "say why the edit is undone")
}

// TestUndoPreviewSaysWhatTheUndoDoes: the request page and the confirm
// page read, for each edit, what undoing it would do, and the undo then
// does it: a rebuildable request that waits only for its edit's approver
// is approved; an edit a schema_invalid item needs cannot be undone while
// its request waits; a revalidate request still needs its approver; in a
// draft, a schema_invalid item would be left out without its edit.
func TestUndoPreviewSaysWhatTheUndoDoes(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	opts := replay.ViewOptions{Items: 10, Payloads: 10, Edits: 10}
	submitted := func(id int64) replay.Request {
		batch, drafts := b.draft(t, oncall, id)
		require.NoError(t, b.replays.EditPayload(ctx, drafts[0].ID, id, oncall, replay.PayloadEdit{Payload: []byte(`{"v":2}`), Reason: "v2"}, quarantine.RequestMeta{}))
		reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "replay"}, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.Equal(t, replay.StatusPendingApproval, reqs[0].Status)
		return reqs[0]
	}

	t.Run("Approves", func(t *testing.T) {
		id := b.seedItem(t, "search.index_update", "preview-approves", nil, `{"v":1}`)
		req := submitted(id)
		v, err := b.replays.View(ctx, req.ID, oncall, opts)
		require.NoError(t, err)
		assert.Equal(t, replay.UndoPreview{Approves: true}, v.Undo[id])
		change, err := b.replays.ChangePayload(ctx, req.ID, id, oncall, replay.PayloadEdit{Undo: true, Reason: "back"}, quarantine.RequestMeta{})
		require.NoError(t, err)
		assert.True(t, change.Approved, "as the page said")
	})
	t.Run("Refused", func(t *testing.T) {
		id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "preview-refused",
			Class: "schema_invalid", Payload: []byte(`{"v":1}`)})
		req := submitted(id)
		v, err := b.replays.View(ctx, req.ID, oncall, opts)
		require.NoError(t, err)
		assert.Contains(t, v.Undo[id].Refused, "so it keeps the edit")
		assert.False(t, v.Undo[id].Approves)
		_, err = b.replays.ChangePayload(ctx, req.ID, id, oncall, replay.PayloadEdit{Undo: true, Reason: "back"}, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "as the page said")
	})
	t.Run("StillWaits", func(t *testing.T) {
		id := b.seedItem(t, "accounts.permission_grant", "preview-waits", map[string][]string{dlq.HeaderPrincipal: {"user:1"}}, `{"v":1}`)
		req := submitted(id)
		v, err := b.replays.View(ctx, req.ID, oncall, opts)
		require.NoError(t, err)
		assert.Equal(t, replay.UndoPreview{}, v.Undo[id], "revalidate needs its approver with or without the edit")
		change, err := b.replays.ChangePayload(ctx, req.ID, id, oncall, replay.PayloadEdit{Undo: true, Reason: "back"}, quarantine.RequestMeta{})
		require.NoError(t, err)
		assert.False(t, change.Approved)
	})
	t.Run("DraftLeavesOut", func(t *testing.T) {
		id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "preview-draft",
			Class: "schema_invalid", Payload: []byte(`{"v":1}`)})
		batch, drafts := b.draft(t, oncall, id)
		require.NoError(t, b.replays.EditPayload(ctx, drafts[0].ID, id, oncall, replay.PayloadEdit{Payload: []byte(`{"v":2}`), Reason: "v2"}, quarantine.RequestMeta{}))
		sel, err := b.replays.Selection(ctx, batch, oncall, 10)
		require.NoError(t, err)
		assert.Contains(t, sel.Requests[0].Undo[id].LeavesOut, "schema_invalid")
		change, err := b.replays.ChangePayload(ctx, drafts[0].ID, id, oncall, replay.PayloadEdit{Undo: true, Reason: "back"}, quarantine.RequestMeta{})
		require.NoError(t, err)
		assert.Equal(t, sel.Requests[0].Undo[id].LeavesOut, change.LeftOut, "as the page said")
	})
}
