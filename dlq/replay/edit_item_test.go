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

// TestLeftOutEditSendsNothing: two rebuildable items of a draft are
// edited; one of them is then taken by another request, so the submit
// leaves it out (holding its edit) and is refused. That edit sends
// nothing: undoing the other item's edit leaves the draft not edited
// (payload_edited counts live items only), and the left-out item's edit
// can still be undone (any item holding an edit is reached): put back and
// judged again, it stays out for what left it out, saying why. The
// draft, no longer edited, is submitted and approved at once, as its
// class asks for no approver.
func TestLeftOutEditSendsNothing(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	taken := b.seedItem(t, "search.index_update", "left-edit-taken", nil, `{"doc":1}`)
	kept := b.seedItem(t, "search.index_update", "left-edit-kept", nil, `{"doc":2}`)
	batch, drafts := b.draft(t, oncall, taken, kept)
	require.Len(t, drafts, 1)
	draft := drafts[0].ID
	for _, id := range []int64{taken, kept} {
		require.NoError(t, b.replays.EditPayload(ctx, draft, id, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":0}`), Reason: "fix"},
			quarantine.RequestMeta{}))
	}
	other := b.request(t, []int64{taken}, replay.SubmitInput{Reason: "taken first"})
	require.Equal(t, replay.StatusApproved, other.Status)
	_, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "both"}, quarantine.RequestMeta{})
	require.Error(t, err, "the submit leaves the taken item out and is refused")
	items, err := b.replays.Items(ctx, draft, 2)
	require.NoError(t, err)
	require.Len(t, items, 2)
	byID := map[int64]replay.Item{items[0].DeadLetterID: items[0], items[1].DeadLetterID: items[1]}
	require.NotEmpty(t, byID[taken].SkipReason)
	require.True(t, byID[taken].Edited)

	_, err = b.replays.ChangePayload(ctx, draft, kept, oncall, replay.PayloadEdit{Undo: true, Reason: "as received"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	req, err := b.replays.Request(ctx, draft)
	require.NoError(t, err)
	assert.False(t, req.PayloadEdited, "only a left-out item holds an edit, and it sends nothing")

	change, err := b.replays.ChangePayload(ctx, draft, taken, oncall, replay.PayloadEdit{Undo: true, Reason: "as received"}, quarantine.RequestMeta{})
	require.NoError(t, err, "the edit of a left-out item can be undone")
	assert.True(t, change.Undone)
	assert.Contains(t, change.LeftOut, "already holds this dead letter", "judged again, it stays out for what left it out")
	items, err = b.replays.Items(ctx, draft, 2)
	require.NoError(t, err)
	for _, it := range items {
		assert.False(t, it.Edited, "item %d", it.DeadLetterID)
		if it.DeadLetterID == taken {
			assert.NotEmpty(t, it.SkipReason)
		} else {
			assert.Empty(t, it.SkipReason)
		}
	}

	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "the other one"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	assert.Equal(t, replay.StatusApproved, reqs[0].Status, "rebuildable, nothing edited: no approver")
	assert.Empty(t, testfactory.CountersDrift(t, b.db.Pool))
}
