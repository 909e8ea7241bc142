package replay_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// okAudits counts the audit rows of action that succeeded on the object
// of type kind and id.
func okAudits(t *testing.T, b *replayBundle, action, kind string, id int64) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log
        WHERE action = $1 AND outcome = 'ok' AND object_type = $2 AND object_id = $3`, action, kind, fmt.Sprint(id)).Scan(&n))
	return n
}

// TestRevPath29CancelLeavesARejectedRequestRejected: a request an
// approver rejected is closed; its requester's cancel afterwards is a
// conflict that changes nothing: the request stays rejected, by the
// approver, for the approver's reason, and no cancel is audited as done.
func TestRevPath29CancelLeavesARejectedRequestRejected(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "email.send", "rev29a-cancel-closed", nats.Header{dlq.HeaderOperationID: {"op-rev29a-cancel-closed"}}, `{}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "resend"})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	require.NoError(t, b.replays.Reject(ctx, req.ID, approver1, replay.RejectInput{IntentHex: req.IntentHex(), Version: req.Version, Reason: "wrong template"}, quarantine.RequestMeta{}))

	err := b.replays.Cancel(ctx, req.ID, oncall, "never mind", quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	r, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusRejected, r.Status, "a closed request stays as it was closed")
	assert.Equal(t, approver1.Subject, r.ClosedBy.Subject, "closed by the approver who rejected it")
	assert.Equal(t, "wrong template", r.StatusReason)
	assert.Zero(t, okAudits(t, b, "replay.cancel", "replay_request", req.ID), "no cancel is recorded as done")
}

// TestRevPath29RejectLeavesAnApprovedRequestRunning: a request approved
// at submit (its class needs no approver) is no longer the approvers' to
// reject: the reject is a conflict, the request stays approved with its
// job waiting, and its dead letter stays spoken for (replay_requested),
// not sent back to quarantine under a job that will still publish it.
func TestRevPath29RejectLeavesAnApprovedRequestRunning(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "rev29a-reject-approved", nil, `{"doc":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "reindex"})
	require.Equal(t, replay.StatusApproved, req.Status)

	err := b.replays.Reject(ctx, req.ID, approver1, replay.RejectInput{IntentHex: req.IntentHex(), Version: req.Version, Reason: "too late"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	r, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusApproved, r.Status)
	assert.Zero(t, r.ClosedBy.Subject, "no one closed it")
	assert.Equal(t, map[string]int{"pending": 1}, b.jobStates(t, req.ID))
	status, held := b.deadLetterStatus(t, id, req.ID)
	assert.Equal(t, "replay_requested", status, "still held by its approved request")
	assert.True(t, held, "still held by its approved request")
	assert.Zero(t, okAudits(t, b, "replay.reject", "replay_request", req.ID), "no reject is recorded as done")
}

// TestRevPath29UndoOfAnApprovedEditIsRefused: an approver approved a
// request holding an edited payload; the requester's undo of the edit
// afterwards is a conflict: the approved intent stands, with the edited
// payload the approver saw and their approval.
func TestRevPath29UndoOfAnApprovedEditIsRefused(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dl, id := b.editedAwaiting(t, "rev29a-undo-approved")
	req, err := b.replays.Request(ctx, id)
	require.NoError(t, err)
	_, err = b.replays.Approve(ctx, id, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	approved, err := b.replays.Request(ctx, id)
	require.NoError(t, err)
	require.Equal(t, replay.StatusApproved, approved.Status)

	_, err = b.replays.ChangePayload(ctx, id, dl, oncall, replay.PayloadEdit{Undo: true, Reason: "back to the original"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	after, err := b.replays.Request(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusApproved, after.Status)
	assert.Equal(t, approved.IntentHex(), after.IntentHex(), "the approved intent is unchanged")
	items, err := b.replays.Items(ctx, id, 1)
	require.NoError(t, err)
	require.Len(t, items, 1)
	edited := sha256.Sum256([]byte(`{"doc":2}`))
	assert.True(t, items[0].Edited, "the item keeps the edit that was approved")
	assert.Equal(t, edited[:], items[0].PayloadSHA256)
	assert.Equal(t, 1, b.approvalRows(t, id), "the approval stands")
	assert.Equal(t, 1, okAudits(t, b, "replay.edit_payload", "dead_letter", dl), "only the edit before the submit is audited")
}
