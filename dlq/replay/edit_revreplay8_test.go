package replay_test

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevReplay8PayloadEditCannotBeUndone: severity low. A requester
// edits an item's payload (a typo, the wrong item) and then pastes the
// payload as received back to undo it. EditPayload refuses
// (replaypolicy.JudgePayloadChange: "the new payload is the one received,
// byte for byte: nothing was edited. Change it, or leave it as it is"),
// which is untrue: the item holds the mistaken edit, and "leave it as it
// is" publishes the mistaken payload once an approver signs. Nothing
// else undoes an edit (no route, no button), so the request stays edited
// (needs an approver, carries Dlq-Payload-Edited) with bytes nobody
// meant; the only way out is to cancel the request (or drop the draft) and start again,
// which nothing tells the requester.
// Expected: an edit back to the payload received clears the edit (the
// item publishes the original, the request is no longer "edited" for
// that item and is judged again as it was), or the refusal says that the
// item still holds the edit and how to drop it.
func TestRevReplay8PayloadEditCannotBeUndone(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	original := []byte(`{"grant":"viewer"}`)
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "accounts.permission_grant", MsgID: "rr8-edit-undo",
		CorrelationID: "corr-rr8-edit", Principal: "user:8", Payload: original})
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "grant lost in the outage"})
	require.Equal(t, replay.StatusPendingApproval, req.Status)

	require.NoError(t, b.replays.EditPayload(ctx, req.ID, id, oncall,
		replay.PayloadEdit{Payload: []byte(`{"grant":"admin"}`), Reason: "typo"}, quarantine.RequestMeta{}))

	// The requester puts the payload received back.
	err := b.replays.EditPayload(ctx, req.ID, id, oncall, replay.PayloadEdit{Payload: original, Reason: "undo my typo"}, quarantine.RequestMeta{})
	assert.NoError(t, err, "an edit cannot be undone: the refusal says nothing was edited, yet the item holds the mistaken payload")

	items, err := b.replays.Items(ctx, req.ID, 10)
	require.NoError(t, err)
	require.Len(t, items, 1)
	sum := sha256.Sum256(original)
	assert.Equal(t, sum[:], items[0].PayloadSHA256, "the item would publish the mistaken edit, not the payload received")
}
