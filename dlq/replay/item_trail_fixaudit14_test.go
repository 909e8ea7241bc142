package replay_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// trailActions are the actions of dead letter dl's trail (msgID its
// message id), oldest first, and the newest row.
func (b *replayBundle) trailActions(t *testing.T, dl int64, msgID string) ([]string, audit.Entry) {
	t.Helper()
	trail, err := audit.Trail(context.Background(), b.db.Pool, "dead_letter", strconv.FormatInt(dl, 10), msgID, "acme", 0)
	require.NoError(t, err)
	require.NotEmpty(t, trail)
	actions := make([]string, len(trail))
	for i, e := range trail {
		actions[i] = e.Action
	}
	return actions, trail[len(trail)-1]
}

// TestFixAudit14EveryEndOfARequestIsOnItsDeadLetters: the other paths that
// end a request and put its dead letters back (an emergency stop of the
// tenant, a policy change's void) write a row under each, naming its
// message and operation id; a cancel of an approved request writes one
// row per item (its job's), not a second one for the release; and every
// such action is one the audit filter knows.
func TestFixAudit14EveryEndOfARequestIsOnItsDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pending := func(t *testing.T, b *replayBundle, msgID string) (int64, replay.Request) {
		dl := b.seedItem(t, "email.send", msgID, nats.Header{dlq.HeaderOperationID: {"op-" + msgID}}, `{}`)
		req := b.request(t, []int64{dl}, replay.SubmitInput{})
		require.Equal(t, replay.StatusPendingApproval, req.Status)
		return dl, req
	}
	quarantined := func(t *testing.T, b *replayBundle, dl int64) {
		d, err := b.store.Get(ctx, dl)
		require.NoError(t, err)
		require.Equal(t, dlq.StatusQuarantined, d.Status)
	}

	t.Run("StopAllOfPendingRequest", func(t *testing.T) {
		t.Parallel()
		b := setupReplay(t)
		dl, _ := pending(t, b, "stop-pending-14")
		res, err := b.replays.StopAll(ctx, "acme", func(replaypolicy.Class) bool { return true }, approver1,
			replay.StopInput{Reason: "incident 14", Typed: replaypolicy.StopPhrase}, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.Equal(t, 1, res.Stopped)
		quarantined(t, b, dl)
		actions, last := b.trailActions(t, dl, "stop-pending-14")
		assert.Equal(t, "replay.item.cancelled", last.Action, "%v", actions)
		assert.Equal(t, "stop-pending-14", last.MessageID)
		assert.Equal(t, "op-stop-pending-14", last.OperationID)
		assert.Contains(t, last.Reason, "incident 14")
		assert.True(t, audit.KnownAction(last.Action))
	})

	t.Run("VoidStaleOfPendingRequest", func(t *testing.T) {
		t.Parallel()
		b := setupPolicies(t, 2)
		require.NoError(t, b.replays.ActivatePolicy(ctx, "first"))
		dl, _ := pending(t, b.replayBundle, "void-pending-14")
		deploy := b.start(t, 1, "deploy")
		voided, err := deploy.VoidStale(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, voided)
		quarantined(t, b.replayBundle, dl)
		actions, last := b.trailActions(t, dl, "void-pending-14")
		assert.Equal(t, "replay.item.voided", last.Action, "%v", actions)
		assert.Equal(t, "op-void-pending-14", last.OperationID)
		assert.Contains(t, last.Reason, "policy changed")
		assert.True(t, audit.KnownAction(last.Action))
		assert.True(t, audit.KnownAction("replay.item.rejected"))
	})

	t.Run("CancelOfApprovedRequestOneRowPerItem", func(t *testing.T) {
		t.Parallel()
		b := setupReplay(t)
		dl := b.seedItem(t, "search.index_update", "cancel-approved-14", nil, `{}`)
		req := b.request(t, []int64{dl}, replay.SubmitInput{})
		require.Equal(t, replay.StatusApproved, req.Status, "rebuildable: approved at submit, its job waits for a worker")
		require.NoError(t, b.replays.Cancel(ctx, req.ID, oncall, "not now", quarantine.RequestMeta{}))
		quarantined(t, b, dl)
		actions, last := b.trailActions(t, dl, "cancel-approved-14")
		assert.Equal(t, "replay.item.cancelled", last.Action, "%v", actions)
		n := 0
		for _, a := range actions {
			if a == "replay.item.cancelled" {
				n++
			}
		}
		assert.Equal(t, 1, n, "the job's row tells of the item; the release writes no second one: %v", actions)
		assert.Contains(t, string(last.After), `"job"`, "the row is the job's")
	})
}
