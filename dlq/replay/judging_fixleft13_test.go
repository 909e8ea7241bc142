package replay_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestFixLeft13RefusalJudgedForAClientGone: a client that hung up before
// the service read the request (its context ended) is refused all the
// same when the rules refuse it, and the refusal is audited: the reads that
// decide it are detached from the client's context. One the rules do not
// refuse changes nothing.
func TestFixLeft13RefusalJudgedForAClientGone(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "email.send", "fixleft13-gone", nats.Header{dlq.HeaderOperationID: {"op-fixleft13-gone"}}, `{}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	gone, cancel := context.WithCancel(ctx)
	cancel()
	denied := func(action string, who string) int {
		var n int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = $1 AND outcome = 'denied' AND actor_subject = $2`,
			action, who).Scan(&n))
		return n
	}

	_, err := b.replays.Approve(gone, req.ID, oncall, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "%v", err)
	assert.Equal(t, 1, denied("replay.approve", oncall.Subject), "the requester's approval, refused, is audited")
	err = b.replays.Reject(gone, req.ID, oncall, replay.RejectInput{IntentHex: req.IntentHex(), Version: req.Version, Reason: "mine"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "%v", err)
	assert.Equal(t, 1, denied("replay.reject", oncall.Subject))
	err = b.replays.Cancel(gone, req.ID, approver1, "not mine", quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "%v", err)
	assert.Equal(t, 1, denied("replay.cancel", approver1.Subject))
	_, err = b.replays.ChangePayload(gone, req.ID, id, approver1, replay.PayloadEdit{Payload: []byte(`{"a":1}`), Reason: "not mine"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "%v", err)
	assert.Equal(t, 1, denied("replay.edit_payload", approver1.Subject))

	// Not refused: the client left, nothing changes.
	_, err = b.replays.Approve(gone, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, b.approvalRows(t, req.ID))
	err = b.replays.Cancel(gone, req.ID, oncall, "", quarantine.RequestMeta{})
	require.ErrorIs(t, err, context.Canceled)
	r, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, r.Status)
}
