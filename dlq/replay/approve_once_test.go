package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestApproveOncePerPerson: an approval from a second identity of someone
// whose approval already counts (replaypolicy.ApprovalStands) is refused
// with a conflict that names the other account, audited as a denied
// replay.approve, and leaves the count as it was; the approver's own
// identity clicking again keeps its own answer.
func TestApproveOncePerPerson(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID = "refund-once"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "timeout"})
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)

	t.Run("SameIdentity", func(t *testing.T) {
		_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err))
		assert.Contains(t, quarantine.ErrorMessage(err), "you already approved this request")
	})

	t.Run("AnotherIdentity", func(t *testing.T) {
		other := quarantine.Actor{Issuer: "https://github.example", Subject: "a1-once", Email: approver1.Email, EmailVerified: true}
		require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: other, Groups: []string{"quarantine:acme:approver"}}))
		_, err := b.replays.Approve(ctx, req.ID, other, in, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
		assert.Contains(t, quarantine.ErrorMessage(err), "your approval under another account ("+approver1.Attribution()+") already counts")

		var outcome, reason string
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT outcome, reason FROM audit_log WHERE action = 'replay.approve' AND actor_subject = $1`,
			other.Subject).Scan(&outcome, &reason))
		assert.Equal(t, "denied", outcome)
		assert.Contains(t, reason, "one person approves once")

		v, err := b.replays.View(ctx, req.ID, other, replay.ViewOptions{})
		require.NoError(t, err)
		assert.Equal(t, 1, v.Count.Have)
		assert.True(t, b.replays.ApprovedBy(v.Request, v.Approvals, other), "the approvals page says they approved it")
	})
}
