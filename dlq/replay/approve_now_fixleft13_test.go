package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestFixLeft13ApproverNowTheRequesterRefused: an approver whose own
// directory entry (a refresh of theirs recorded it after their session
// began) has the requester's verified email is the requester's other
// identity: Approve reads it up front and refuses (invalid: the page says
// why), audited as denied, and records no approval (before, the approval
// was recorded and then counted for nothing); Reject refuses them too, the
// request page does not offer them the review, and the navigation does
// not count the request as theirs to approve.
func TestFixLeft13ApproverNowTheRequesterRefused(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "email.send", "fixleft13-now", nats.Header{dlq.HeaderOperationID: {"op-fixleft13-now"}}, `{}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	now := approver1
	now.Email, now.EmailVerified = oncall.Email, true
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: now, Groups: []string{"quarantine:acme:approver"}}))

	v, err := b.replays.View(ctx, req.ID, approver1, replay.ViewOptions{})
	require.NoError(t, err)
	assert.False(t, v.Reviewer, "the page does not offer the review")
	n, err := b.replays.Awaiting(ctx, []replay.ClassScope{{Class: replaypolicy.SameOperation, All: true}}, approver1, 10)
	require.NoError(t, err)
	assert.Zero(t, n, "not counted as waiting for them")

	_, err = b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
	assert.Contains(t, quarantine.ErrorMessage(err), "you cannot approve your own request: your account, as the directory has it now")
	assert.NotErrorIs(t, err, replay.ErrConfirmation)
	var denied int
	assert.Zero(t, b.approvalRows(t, req.ID), "no approval recorded to count for nothing")
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'replay.approve' AND outcome = 'denied'
        AND actor_subject = $1 AND object_id = $2`, approver1.Subject, fmt.Sprint(req.ID)).Scan(&denied))
	assert.Equal(t, 1, denied, "the refusal is audited")

	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(b.replays.Reject(ctx, req.ID, approver1, replay.RejectInput{IntentHex: req.IntentHex(), Version: req.Version, Reason: "no"}, quarantine.RequestMeta{})),
		"nor do they reject it")

	// Another approver, whom the directory makes nobody else, approves.
	d, err := b.replays.Approve(ctx, req.ID, approver2, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.True(t, d.Ready)
}
