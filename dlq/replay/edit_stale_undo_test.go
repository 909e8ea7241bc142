package replay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// pageView reads request id as a request page does, payload forms and
// undo previews included.
func pageView(t *testing.T, b *replayBundle, id int64) replay.View {
	t.Helper()
	v, err := b.replays.View(context.Background(), id, oncall, replay.ViewOptions{Items: 100, Payloads: 20, Edits: 20})
	require.NoError(t, err)
	return v
}

// TestUndoPreviewOnAStaleProcessPromisesNoApproval: a rebuildable request
// waits for approval only for its edit; its page says the undo approves
// it and replays now, and it does, while this process's policy is the
// active one. Once another process activates a newer policy, this one
// approves nothing: the page says the undo cannot be done here, and why,
// and the undo is refused (conflict) saying the edit was not undone,
// nothing changed. The page and the undo are one judgement
// (approvedOnUndo).
func TestUndoPreviewOnAStaleProcessPromisesNoApproval(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dl, id := b.editedAwaiting(t, "stale-undo")
	p := pageView(t, b, id).Undo[dl]
	require.True(t, p.Approves, "on the active policy the undo approves it")
	require.Empty(t, p.Refused)

	activateElsewhere(t, b, policyAt(t, 400))

	p = pageView(t, b, id).Undo[dl]
	assert.False(t, p.Approves, "a stale process promises no approval")
	assert.True(t, p.Stale)
	assert.Contains(t, p.Refused, "is not the active one", "it says why the undo cannot be done here")

	_, err := b.replays.ChangePayload(ctx, id, dl, oncall, replay.PayloadEdit{Undo: true, Reason: "as received"}, quarantine.RequestMeta{})
	require.Error(t, err, "refused, as the page said")
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err))
	assert.True(t, strings.HasPrefix(quarantine.ErrorMessage(err), "the edit was not undone: "+p.Refused), quarantine.ErrorMessage(err))
	req, err := b.replays.Request(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, req.Status)
	assert.True(t, req.PayloadEdited, "nothing changed")
}
