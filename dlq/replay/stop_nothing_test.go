package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestStopLeavesDoneRequestThatCannotRepublishAlone: a request done with
// problems whose item needs a person but needed two approvers (a refund)
// publishes nothing more: its item may only be settled applied or not
// applied (MayRepublish). An emergency stop would change nothing of it, so
// it is not offered (CanStop), not listed (Stoppable), a stop of it is a
// conflict that says why and changes nothing, and a stop of its tenant
// neither stops it nor counts it as left; a rebuildable one beside it, whose
// item may be republished, is listed and stopped as before. The refund's
// item may still be settled.
func TestStopLeavesDoneRequestThatCannotRepublishAlone(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "orders.refund", "stop-nothing-refund", nil, `{"refund":"order-9"}`)
	refund := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund timed out"})
	require.Equal(t, 2, refund.ApprovalsNeeded, "orders.refund is manual: two approvers")
	in := replay.ApproveInput{IntentHex: refund.IntentHex(), Confirmation: "REPLAY stop-nothing-refund"}
	for _, a := range []quarantine.Actor{approver1, approver2} {
		_, err := b.replays.Approve(ctx, refund.ID, a, in, quarantine.RequestMeta{})
		require.NoError(t, err)
	}
	testfactory.NeedsPerson(t, b.db.Pool, refund.ID)
	r, err := b.replays.Request(ctx, refund.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusDoneWithProblems, r.Status)
	require.Equal(t, replaypolicy.CheckRepublishTwoApprovers, b.replays.MayRepublish(r).Check)

	rebuild := b.request(t, []int64{b.seedItem(t, "search.index_update", "stop-nothing-rebuild", nil, "{}")}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.db.Pool, rebuild.ID)

	listed, err := b.replays.Stoppable(ctx, []string{"acme"})
	require.NoError(t, err)
	var ids []int64
	for _, r := range listed {
		ids = append(ids, r.ID)
	}
	assert.Equal(t, []int64{rebuild.ID}, ids, "only the request that may still publish is listed")
	ok, err := b.replays.CanStop(ctx, refund.ID)
	require.NoError(t, err)
	assert.False(t, ok, "the refund request is not offered the stop")

	stop := replay.StopInput{Reason: "incident 9", Typed: replaypolicy.StopPhrase}
	err = b.replays.Stop(ctx, refund.ID, approver1, stop, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	assert.Contains(t, quarantine.ErrorMessage(err), "nothing to stop")
	assert.Contains(t, quarantine.ErrorMessage(err), "can only be settled applied or not applied")

	res, err := b.replays.StopAll(ctx, "acme", func(replaypolicy.Class) bool { return true }, approver1, stop, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Stopped, "the rebuildable request")
	assert.Empty(t, res.Left, "the refund request is not one the stop left open")
	for want, id := range map[replay.Status]int64{replay.StatusDoneWithProblems: refund.ID, replay.StatusCancelled: rebuild.ID} {
		r, err := b.replays.Request(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, want, r.Status, "request %d", id)
	}
	var stops int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'replay.stop' AND object_id = $1`,
		fmt.Sprint(refund.ID)).Scan(&stops))
	assert.Zero(t, stops, "no stop of the refund request is audited")

	require.NoError(t, b.replays.Reconcile(ctx, refund.ID, id, approver1,
		replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "no refund for order-9 at the payments service"}, quarantine.RequestMeta{}))
	assert.Equal(t, "cancelled", b.job(t, refund.ID, id).State, "its item is settled not applied")
}
