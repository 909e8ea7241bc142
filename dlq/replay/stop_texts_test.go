package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestStopConflictNamesOnlyWhatTheRequestHas: a stop of a request done
// with problems that a stop would not change says why in terms of what
// the request has. A refund (two approvers) whose item waits for a
// person: that item can only be settled applied or not applied. Once a
// person settled it, and for a rebuildable request with no item waiting:
// none of its items waits for a person, and the text names no item that
// needs reconciliation.
func TestStopConflictNamesOnlyWhatTheRequestHas(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	stop := replay.StopInput{Reason: "incident 8", Typed: replaypolicy.StopPhrase}
	conflict := func(id int64) string {
		t.Helper()
		err := b.replays.Stop(ctx, id, approver1, stop, quarantine.RequestMeta{})
		require.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
		return quarantine.ErrorMessage(err)
	}

	id := b.seedItem(t, "orders.refund", "stop-texts-refund", nil, `{"refund":"order-8"}`)
	refund := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund timed out"})
	in := replay.ApproveInput{IntentHex: refund.IntentHex(), Confirmation: "REPLAY stop-texts-refund"}
	for _, a := range []quarantine.Actor{approver1, approver2} {
		_, err := b.replays.Approve(ctx, refund.ID, a, in, quarantine.RequestMeta{})
		require.NoError(t, err)
	}
	testfactory.NeedsPerson(t, b.db.Pool, refund.ID)
	assert.Equal(t, "nothing to stop: the request publishes nothing more, and its item that needs reconciliation can only be settled applied or not applied (the request needed two approvers)",
		conflict(refund.ID))

	require.NoError(t, b.replays.Reconcile(ctx, refund.ID, id, approver1,
		replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "no refund for order-8 at the payments service"}, quarantine.RequestMeta{}))
	r, err := b.replays.Request(ctx, refund.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusDoneWithProblems, r.Status, "settled not applied: not replayed")
	msg := conflict(refund.ID)
	assert.Equal(t, "nothing to stop: the request publishes nothing more, and none of its items waits for a person", msg)
	assert.NotContains(t, msg, "reconciliation", "it has no such item any more")

	rebuild := b.seedItem(t, "search.index_update", "stop-texts-rebuild", nil, "{}")
	easy := b.request(t, []int64{rebuild}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.db.Pool, easy.ID)
	require.NoError(t, b.replays.Reconcile(ctx, easy.ID, rebuild, approver1,
		replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "the index was rebuilt since"}, quarantine.RequestMeta{}))
	msg = conflict(easy.ID)
	assert.Equal(t, "nothing to stop: the request publishes nothing more, and none of its items waits for a person", msg)
}
