package replay_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestReconcileRepublishRefusedForTwoApproverClass: a manual item
// (orders.refund: two approvers, neither the requester) is approved by two
// people, published, and its PubAck never comes; past the target's window
// it needs a person. "Not applied, republish" would be a fresh first
// publish of an irreversible item on one approver's word, days after the
// two approvals and without their expiry: it is refused (invalid, with the
// reason the page shows), audited as denied, and nothing changes: the item
// still needs reconciliation, its dead letter is held, the request is done
// with problems, and the target gets nothing more. "Not applied, leave it"
// is still open to that approver and puts the dead letter back in
// quarantine, from where a new request with its own two approvals may
// replay it.
func TestReconcileRepublishRefusedForTwoApproverClass(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)

	const msgID, subject = "refund-unknown-1", "app.acme.orders.refund"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-1"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	require.Equal(t, 2, req.ApprovalsNeeded, "orders.refund is manual: two approvers")
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	for _, a := range []quarantine.Actor{approver1, approver2} {
		_, err := b.replays.Approve(ctx, req.ID, a, in, quarantine.RequestMeta{})
		require.NoError(t, err)
	}

	// The publish lands but its PubAck never comes: past the window the
	// item needs a person.
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1<<30)
	wait.Until(t, "the item to need reconciliation", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, req.ID, id).State == "needs_reconciliation"
	})
	b.waitStatus(t, req.ID, replay.StatusDoneWithProblems)
	require.Equal(t, 1, b.onSubject(t, subject), "the first publish landed once")

	// Either approver alone: refused, audited, nothing changed.
	for _, a := range []quarantine.Actor{approver1, approver2} {
		err = b.replays.Reconcile(ctx, req.ID, id, a, replay.ReconcileInput{Choice: replaypolicy.Republish,
			Note: "the payments service has no refund for order-1"}, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
		assert.Equal(t, replaypolicy.JudgeRepublish(string(replay.StatusDoneWithProblems), 2).Reason, quarantine.ErrorMessage(err),
			"the service says what the rule says")
		var denied int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'replay.item.reconciled'
            AND outcome = 'denied' AND actor_subject = $1 AND object_id = $2 AND reason = $3`,
			a.Subject, strconv.FormatInt(req.ID, 10), quarantine.ErrorMessage(err)).Scan(&denied))
		assert.Equal(t, 1, denied, "the refusal of %s is audited", a.Subject)
	}
	var settled, running int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE action = 'replay.item.reconciled'),
        count(*) FILTER (WHERE action = 'replay.running') FROM audit_log WHERE outcome = 'ok'`).Scan(&settled, &running))
	assert.Zero(t, settled, "nothing was settled")
	assert.Equal(t, 1, running, "the worker's, at the first publish: the request does not run again")
	assert.Equal(t, "needs_reconciliation", b.job(t, req.ID, id).State)
	r, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusDoneWithProblems, r.Status)
	d, err := b.store.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusNeedsReconciliation, d.Status)
	w2 := b.worker(t, replay.WorkerConfig{})
	_, err = w2.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, b.onSubject(t, subject), "the target gets nothing more")

	// Leave it: back to quarantine, for a new request of its own.
	require.NoError(t, b.replays.Reconcile(ctx, req.ID, id, approver1, replay.ReconcileInput{Choice: replaypolicy.NotApplied,
		Note: "the payments service has no refund for order-1"}, quarantine.RequestMeta{}))
	assert.Equal(t, "cancelled", b.job(t, req.ID, id).State)
	d, err = b.store.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusQuarantined, d.Status)
	again := testfactory.Request(t, b.replays, oncall, []int64{id}, replay.SubmitInput{Reason: "the refund never happened"})
	assert.Equal(t, replay.StatusPendingApproval, again.Status, "a new request waits for its own two approvals")
	assert.Equal(t, 1, b.onSubject(t, subject))
}
