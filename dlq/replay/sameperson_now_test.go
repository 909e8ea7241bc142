package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestSelfApprovalByChangedEmailRefusedAndAudited: the approver whose
// verified email the requester's identity holds now (a change recorded
// after the request) is refused as the requester is, and the refusal is
// audited as denied, as every separation-of-duties refusal is.
func TestSelfApprovalByChangedEmailRefusedAndAudited(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "email.send", "now-refused", nats.Header{dlq.HeaderOperationID: {"op-now-refused"}}, `{}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	nowOncall := oncall
	nowOncall.Email, nowOncall.EmailVerified = "a1@example.com", true
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: nowOncall, Groups: []string{"quarantine:acme:oncall"}}))

	_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "%v", err)
	assert.Contains(t, err.Error(), "the requester's account now has your email address")
	var outcome string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT outcome FROM audit_log WHERE action = 'replay.approve' AND actor_subject = $1`,
		approver1.Subject).Scan(&outcome))
	assert.Equal(t, string(audit.OutcomeDenied), outcome)
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(b.replays.Reject(ctx, req.ID, approver1, replay.RejectInput{IntentHex: req.IntentHex(), Version: req.Version, Reason: "no"}, quarantine.RequestMeta{})),
		"nor do they reject it")
}

// TestWorkerBlocksApprovalWhenRequesterNowSharesApproversEmail: a request
// approved by someone else; before the worker publishes it, the
// requester's identity takes the approver's verified email (a refresh
// records it). The worker judges the approval again with the people as
// the directory has them now: one person asked and approved, so nothing
// is published and the job is blocked, saying why.
func TestWorkerBlocksApprovalWhenRequesterNowSharesApproversEmail(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "now-worker"
	id := b.seedItem(t, "email.send", msgID, nats.Header{dlq.HeaderOperationID: {"op-now-worker"}}, `{}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	verified := approver1
	verified.EmailVerified = true
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: verified, Groups: []string{"quarantine:acme:approver"}}))
	d, err := b.replays.Approve(ctx, req.ID, verified, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)

	nowOncall := oncall
	nowOncall.Email, nowOncall.EmailVerified = "a1@example.com", true
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: nowOncall, Groups: []string{"quarantine:acme:oncall"}}))
	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond})
	j := b.rerun(t, w, req.ID, id)
	assert.Equal(t, "blocked", j.State)
	assert.Equal(t, "the approver a1@example.com may be the requester oncall@example.com (unverified): their accounts share an email (now, or as one of them had it before); request again", j.Result)
	assert.Zero(t, b.publishedAs(t, msgID))
}

// TestTwoApproversNowOnePersonCountOnce: manual needs two people; the
// first approver's identity takes the second's verified email before the
// second approves: the second approval is refused (one person approves
// once), and the request waits.
func TestTwoApproversNowOnePersonCountOnce(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "orders.refund", "now-two", nil, `{}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, 2, req.ApprovalsNeeded)
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY now-two"}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	nowA1 := approver1
	nowA1.Email, nowA1.EmailVerified = "a2@example.com", true
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: nowA1, Groups: []string{"quarantine:acme:approver"}}))

	_, err = b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "two accounts of one person approved twice (%v)", err)
	v, err := b.replays.View(ctx, req.ID, approver2, replay.ViewOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, v.Count.Have)
	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, got.Status)
}
