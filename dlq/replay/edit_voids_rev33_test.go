package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevAudit33EditAuditsTheApprovalsItVoids: a request waits for its
// second approver; the requester edits a payload, and every approval of
// the earlier intent was deleted with no row naming its approver: the
// auditor saw the approval given, then nothing. Each approval an edit
// takes out is audited as voided (replay.approval.voided), naming its
// approver and the edit, in the edit's transaction.
func TestRevAudit33EditAuditsTheApprovalsItVoids(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID = "refund-rr33-edit"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-33"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "timeout"})
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusPendingApproval, got.Status, "it waits for a second approver")

	require.NoError(t, b.replays.EditPayload(ctx, req.ID, id, got.Requester,
		replay.PayloadEdit{Payload: []byte(`{"refund":"order-33","amount":10}`), Reason: "amount from the ticket"}, quarantine.RequestMeta{}))

	var n int
	var subject, reason, edited string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) OVER (), before->>'approver_subject', reason, after->>'edited' FROM audit_log
        WHERE action = $1 AND object_id = $2`, audit.ActionReplayApprovalVoid, fmt.Sprint(req.ID)).Scan(&n, &subject, &reason, &edited))
	assert.Equal(t, 1, n, "one row for the one approval the edit took out")
	assert.Equal(t, approver1.Subject, subject, "naming its approver")
	assert.Contains(t, reason, fmt.Sprintf("the payload of dead letter %d was edited", id))
	assert.Equal(t, fmt.Sprint(id), edited)
	var left int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_approvals WHERE request_id = $1`, req.ID).Scan(&left))
	assert.Zero(t, left, "the approval is gone, as before: it was of the earlier intent")
	res, err := audit.Verify(ctx, b.db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	assert.True(t, res.OK(), "%s", res)
}
