package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRev42RejectRefusedAfterAnEditSinceItWasRead: an approver reads a
// request whose payload was edited to {"doc":2} "fix"; the requester then
// edits it to {"doc":3}. A rejection of the request as read closed a
// version its approver never saw, with a reason about the one replaced;
// bound to the intent and version read, as an approval is, it is refused
// (a conflict, nothing recorded, the request still waiting and its dead
// letter still held), and so it is after an edit back to the intent read,
// whose reason the approver never read. A rejection after reading the
// request again goes.
func TestRev42RejectRefusedAfterAnEditSinceItWasRead(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dl, id := b.editedAwaiting(t, "rev42-reject")
	read, err := b.replays.Request(ctx, id)
	require.NoError(t, err)
	asRead := replay.RejectInput{IntentHex: read.IntentHex(), Version: read.Version, Reason: "the doc is not 2"}
	refused := func(why, says string) {
		t.Helper()
		before := b.auditRows(t)
		err := b.replays.Reject(ctx, id, approver1, asRead, quarantine.RequestMeta{})
		require.Error(t, err, why)
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%s: %v", why, err)
		assert.Contains(t, quarantine.ErrorMessage(err), says, why)
		assert.Equal(t, before, b.auditRows(t), "%s: nothing recorded", why)
		got, err := b.replays.Request(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, replay.StatusPendingApproval, got.Status, "%s: the request still waits", why)
		status, held := b.deadLetterStatus(t, dl, id)
		assert.Equal(t, "replay_requested", status, why)
		assert.True(t, held, "%s: its dead letter is still held by the request", why)
	}

	require.NoError(t, b.replays.EditPayload(ctx, id, dl, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":3}`), Reason: "3 it is"}, quarantine.RequestMeta{}))
	refused("an edit since it was read", "the request changed since you reviewed it")

	require.NoError(t, b.replays.EditPayload(ctx, id, dl, oncall,
		replay.PayloadEdit{Payload: []byte(`{"doc":2}`), Reason: "a different justification"}, quarantine.RequestMeta{}))
	now, err := b.replays.Request(ctx, id)
	require.NoError(t, err)
	require.Equal(t, read.IntentHex(), now.IntentHex(), "there and back: the intent read is the request's again")
	refused("an edit there and back", "the request changed since you read it: read it again")

	require.NoError(t, b.replays.Reject(ctx, id, approver1,
		replay.RejectInput{IntentHex: now.IntentHex(), Version: now.Version, Reason: "not with this justification"}, quarantine.RequestMeta{}))
	got, err := b.replays.Request(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusRejected, got.Status, "rejected as read again")
	assert.Equal(t, 1, okAudits(t, b, "replay.reject", "replay_request", id))
}
