package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// leftOutEdited is a draft (batch, request id) of two edited rebuildable
// items whose submit left one (taken, which another request took) out,
// holding its edit, and was refused; kept is the other.
func leftOutEdited(t *testing.T, b *replayBundle, tag string) (batch string, id, taken, kept int64) {
	t.Helper()
	ctx := context.Background()
	taken = b.seedItem(t, "search.index_update", tag+"-taken", nil, `{"doc":1}`)
	kept = b.seedItem(t, "search.index_update", tag+"-kept", nil, `{"doc":2}`)
	batch, drafts := b.draft(t, oncall, taken, kept)
	require.Len(t, drafts, 1)
	id = drafts[0].ID
	for _, dl := range []int64{taken, kept} {
		require.NoError(t, b.replays.EditPayload(ctx, id, dl, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":0}`), Reason: "fix"},
			quarantine.RequestMeta{}))
	}
	b.request(t, []int64{taken}, replay.SubmitInput{Reason: "taken first"})
	_, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "both"}, quarantine.RequestMeta{})
	require.Error(t, err, "the submit leaves the taken item out and is refused")
	return batch, id, taken, kept
}

// TestLeftOutEditIsOfferedItsUndo: an item left out that holds an edit
// (the submit left it out: another request took its dead letter) is among
// the payloads its requester's pages offer, as one whose edit can only be
// undone (UndoOnly), with why it was left out and what the undo does, as
// the undo then does it: in the draft, put back and judged again, it stays
// out; in the request submitted after, it stays out without its edit.
func TestLeftOutEditIsOfferedItsUndo(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	batch, id, taken, kept := leftOutEdited(t, b, "offer-undo")

	sel, err := b.replays.Selection(ctx, batch, oncall, 10)
	require.NoError(t, err)
	require.Len(t, sel.Requests, 1)
	r := sel.Requests[0]
	require.Contains(t, r.Payloads, taken, "the left-out item's edit is offered")
	assert.True(t, r.Payloads[taken].UndoOnly, "to be undone, not changed")
	assert.Equal(t, `{"doc":0}`, string(r.Payloads[taken].Data), "the edit it holds")
	assert.False(t, r.Payloads[kept].UndoOnly)
	p := r.Undo[taken]
	assert.Contains(t, p.LeftOut, "already holds this dead letter", "why it is left out")
	assert.Contains(t, p.LeavesOut, "already holds this dead letter", "undone, it is judged again and stays out")

	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "the other one"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	require.Equal(t, replay.StatusPendingApproval, reqs[0].Status, "the kept item's edit needs an approver")
	v := pageView(t, b, id)
	require.Contains(t, v.Payloads, taken)
	assert.True(t, v.Payloads[taken].UndoOnly)
	p = v.Undo[taken]
	assert.Contains(t, p.LeftOut, "already holds this dead letter")
	assert.Empty(t, p.Refused)
	assert.False(t, p.Approves, "the kept item's edit still needs its approver")

	change, err := b.replays.ChangePayload(ctx, id, taken, oncall, replay.PayloadEdit{Undo: true, Reason: "sends nothing"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.True(t, change.Undone)
	assert.False(t, change.Approved, "as the page said")
	assert.Equal(t, p.LeftOut, change.LeftOut, "it stays out, for what left it out")
	items, err := b.replays.Items(ctx, id, 2)
	require.NoError(t, err)
	for _, it := range items {
		if it.DeadLetterID == taken {
			assert.False(t, it.Edited, "the edit is gone")
			assert.NotEmpty(t, it.SkipReason, "and the item still left out")
		}
	}
	v = pageView(t, b, id)
	assert.NotContains(t, v.Payloads, taken, "nothing left to undo")
	assert.Empty(t, testfactory.CountersDrift(t, b.db.Pool))
}
