package replay_test

import (
	"context"
	"strconv"
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
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestPolicyActivatedMidClaimPublishesNothing: a worker claims and judges
// a request under the active policy; before it publishes, another process
// activates a new policy (a deploy). The publish gate finds the request's
// policy no longer active: nothing is published, the job goes back to the
// next claim, which blocks it (approved under a policy no longer in force).
func TestPolicyActivatedMidClaimPublishesNothing(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.replays.ActivatePolicy(ctx, "first"))
	id := b.seedItem(t, "search.index_update", "mid-policy", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	newer := policyAt(t, 400)
	require.NotEqual(t, b.policy.Load().Version(), newer.Version())
	second := replay.New(b.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return newer }, Subjects: testSubjects(t)})

	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond}) // a released job is due again at once
	w.AfterJudge(func() { require.NoError(t, second.ActivatePolicy(ctx, "second")) })
	n, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	assert.Zero(t, b.publishedAs(t, "mid-policy"), "judged under the old policy, published under the new one")
	j := b.job(t, req.ID, id)
	assert.Equal(t, "pending", j.State)
	assert.Equal(t, "released: the active replay policy changed since the claim judged it", j.Result)

	// The process reloads its file (the deploy reached it) and judges again.
	w.AfterJudge(nil)
	b.policy.Store(newer)
	j = b.rerun(t, w, req.ID, id)
	assert.Equal(t, "blocked", j.State)
	assert.Equal(t, "the replay policy changed since approval; request again", j.Result)
	assert.Zero(t, b.publishedAs(t, "mid-policy"))
}

// TestRightsLostMidClaimPublishNothing: a worker claims and judges an
// approved request while its people hold their rights; before it
// publishes, a right goes (the approver's group is gone at a refresh, the
// approver's binding is removed, the requester is signed out everywhere by
// an admin). The publish gate sees that what the rights rested on moved:
// nothing is published, and the next claim blocks the job, naming who lost
// which right.
func TestRightsLostMidClaimPublishNothing(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	admin := authz.User{Actor: quarantine.Actor{Issuer: "https://idp.example", Subject: "admin"}}
	bindings := authz.NewBindings(b.db.Pool)
	bound := quarantine.Actor{Issuer: "https://idp.example", Subject: "bound", Email: "bound@example.com", EmailVerified: true}
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: bound}))
	binding, err := bindings.Add(ctx, authz.BindingInput{Email: bound.Email, Role: authz.RoleApprover, Tenant: "acme"}, admin, audit.Event{})
	require.NoError(t, err)

	for _, tt := range []struct {
		name     string
		approver quarantine.Actor
		lose     func()
		blocked  string
	}{
		{"GroupGoneAtRefresh", approver1, func() {
			require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: approver1})) // the provider lists no group now
		}, "the approver a1@example.com (unverified) no longer may approve same_operation replays in acme"},
		{"BindingRemoved", bound, func() {
			require.NoError(t, bindings.Delete(ctx, binding.ID, admin, func(authz.Binding) bool { return true }, audit.Event{}))
		}, "the approver bound@example.com no longer may approve same_operation replays in acme"},
		{"RequesterSignedOutEverywhere", approver2, func() {
			_, err := b.db.OwnerPool.Exec(ctx, `UPDATE user_directory SET groups = '{}', revoked_at = now(), revoked_reason = 'the test'
                WHERE subject = $1`, oncall.Subject)
			require.NoError(t, err)
		}, "the requester oncall@example.com (unverified) no longer may request same_operation replays in acme"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msgID := "mid-rights-" + tt.name
			id := b.seedItem(t, "email.send", msgID, nats.Header{dlq.HeaderOperationID: {"op-" + msgID}}, "{}")
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			require.Equal(t, replay.StatusPendingApproval, req.Status)
			d, err := b.replays.Approve(ctx, req.ID, tt.approver, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
			require.NoError(t, err)
			require.True(t, d.Ready)

			w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond}) // a released job is due again at once
			w.AfterJudge(tt.lose)
			n, err := w.RunOnce(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			assert.Zero(t, b.publishedAs(t, msgID), "judged while the right was held, published after it was lost")
			j := b.job(t, req.ID, id)
			assert.Equal(t, "pending", j.State)
			assert.Equal(t, "released: the rights of the request's people changed since the claim judged them", j.Result)

			w.AfterJudge(nil)
			j = b.rerun(t, w, req.ID, id)
			assert.Equal(t, "blocked", j.State)
			assert.Equal(t, tt.blocked, j.Result)
			assert.Zero(t, b.publishedAs(t, msgID))
		})
	}
}

// rerun runs w until the job of dead letter deadLetterID of request
// requestID, released by an earlier claim, has been claimed again and
// ended, and returns it.
func (b *replayBundle) rerun(t *testing.T, w *replay.Worker, requestID, deadLetterID int64) jobRow {
	t.Helper()
	var j jobRow
	wait.Until(t, "the released job to be judged again", time.Minute, func() bool {
		_, err := w.RunOnce(context.Background())
		require.NoError(t, err)
		j = b.job(t, requestID, deadLetterID)
		return j.State != "pending"
	})
	return j
}

// TestApprovalCountsOnlyWhileApproverHoldsRight: a manual request needs
// two approvers. The first approves, then loses the right to approve (the
// provider lists no group at their next refresh); the second approval
// does not complete the request: the first one is voided (audited in the
// same transaction) and the request waits. The first approver, given the
// right back, approves again: that renewed approval counts, and the
// request runs. A request whose requester lost the right to request is
// not approved at all.
func TestApprovalCountsOnlyWhileApproverHoldsRight(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	approverGroup := []string{"quarantine:acme:approver"}
	id := b.seedItem(t, "orders.refund", "standing-1", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY standing-1"}
	d, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Equal(t, 1, d.ApprovalsHave)

	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: approver1})) // no group at the next refresh
	d, err = b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.False(t, d.Ready, "an approver who lost the right does not complete the request")
	assert.Equal(t, 1, d.ApprovalsHave)
	r, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, r.Status)
	assert.Empty(t, b.jobStates(t, req.ID))
	var reason string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT void_reason FROM replay_approvals WHERE request_id = $1 AND approver_subject = $2 AND voided_at IS NOT NULL`,
		req.ID, approver1.Subject).Scan(&reason))
	assert.Equal(t, "the approver a1@example.com (unverified) no longer may approve manual replays in acme", reason)
	var auditReason, actor string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT reason, actor_subject FROM audit_log WHERE action = $1 AND object_id = $2`,
		audit.ActionReplayApprovalVoid, strconv.FormatInt(req.ID, 10)).Scan(&auditReason, &actor))
	assert.Equal(t, reason, auditReason)
	assert.Equal(t, approver2.Subject, actor, "voided in the transaction of the approval that asked")

	_, err = b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "a second click is still not a second approval: %v", err)
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: approver1, Groups: approverGroup})) // the right is back
	waiting, err := b.replays.Awaiting(ctx, mayScopes([]string{"acme"}, allowAll), approver1, 10)
	require.NoError(t, err)
	assert.Equal(t, 1, waiting, "the request waits for its voided approver again (their approvals page counts it)")
	d, err = b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err, "a voided approval is given again")
	assert.True(t, d.Ready)
	assert.Equal(t, 2, d.ApprovalsHave)
	assert.Equal(t, 1, countAudit(t, b, audit.ActionReplayApprovalVoid))
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Equal(t, 1, b.publishedAs(t, "standing-1"))

	t.Run("RequesterLostRight", func(t *testing.T) {
		other := b.seedItem(t, "email.send", "standing-2", nats.Header{dlq.HeaderOperationID: {"op-standing-2"}}, "{}")
		req := b.request(t, []int64{other}, replay.SubmitInput{})
		require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: oncall})) // no group any more
		_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
		assert.ErrorContains(t, err, "the requester oncall@example.com (unverified) no longer may request same_operation replays in acme")
		assert.Zero(t, b.approvalRows(t, req.ID), "nothing counted")
	})
}

// TestApprovedItemCannotBeClosedBeforeItsSend: between the approval and
// the send, the dead letter of an approved request cannot be discarded or
// resolved (the close refuses it, audited as denied): it is held by the
// request, which replays it once. (At execution the worker judges its
// status again all the same: TestWorkerRechecksItemStatus.)
func TestApprovedItemCannotBeClosedBeforeItsSend(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "email.send", "held-close", nats.Header{dlq.HeaderOperationID: {"op-held-close"}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	for _, to := range []dlq.Status{dlq.StatusDiscarded, dlq.StatusResolved} {
		n, err := b.store.Close(ctx, dlq.CloseInput{IDs: []int64{id}, To: to, Reason: "behind the approval's back", All: true}, oncall, quarantine.RequestMeta{})
		assert.Zero(t, n, "%s: %v", to, err)
	}
	var denied int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE outcome = 'denied' AND action IN ($1, $2)
        AND reason LIKE '%not open (replay_requested)%'`, audit.ActionDeadLetterDiscard, audit.ActionDeadLetterResolve).Scan(&denied))
	assert.Equal(t, 2, denied)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Equal(t, 1, b.publishedAs(t, "held-close"))
	got, err := b.store.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusReplayed, got.Status)
}
