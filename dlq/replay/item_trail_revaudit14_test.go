package replay_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevAudit14EndOfPendingRequestOnItsDeadLetter: a request waiting for
// approval holds its dead letters (replay_requested). Its submit writes a
// row per item under the item's dead letter and message id
// (replay.item.requested, auditItems: "so an auditor finds every step of
// an item's replay by message id"), and an approval does too
// (replay.item.approved); a halt of a request with jobs writes
// replay.item.cancelled per job. But a rejection, or the requester's
// cancel, of a request waiting for approval writes only the request's
// row (close/halt -> setStatus -> auditItems with no item action), while
// each of its dead letters moves from replay_requested back to
// quarantined (requeueItems). The dead letter's trail on its page
// (audit.Trail) and the auditor's message-id filter so show the item
// requested and then nothing: the step that ended the replay and put the
// dead letter back is found only by knowing the request's number.
func TestRevAudit14EndOfPendingRequestOnItsDeadLetter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		action string
		end    func(b *replayBundle, req replay.Request) error
	}{
		{"Reject", "replay.reject", func(b *replayBundle, req replay.Request) error {
			return b.replays.Reject(context.Background(), req.ID, approver1,
				replay.RejectInput{IntentHex: req.IntentHex(), Version: req.Version, Reason: "wrong template"}, quarantine.RequestMeta{})
		}},
		{"Cancel", "replay.cancel", func(b *replayBundle, req replay.Request) error {
			return b.replays.Cancel(context.Background(), req.ID, oncall, "asked by mistake", quarantine.RequestMeta{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			ctx := context.Background()
			msgID := "mail-" + strings.ToLower(tc.name)
			dl := b.seedItem(t, "email.send", msgID, nats.Header{dlq.HeaderOperationID: {"op-" + msgID}}, `{}`)
			req := b.request(t, []int64{dl}, replay.SubmitInput{})
			require.Equal(t, replay.StatusPendingApproval, req.Status, "same_operation waits for one approver")
			d, err := b.store.Get(ctx, dl)
			require.NoError(t, err)
			require.Equal(t, dlq.StatusReplayRequested, d.Status)

			require.NoError(t, tc.end(b, req))
			d, err = b.store.Get(ctx, dl)
			require.NoError(t, err)
			require.Equal(t, dlq.StatusQuarantined, d.Status, "the dead letter went back: a state change of it")

			trail, err := audit.Trail(ctx, b.db.Pool, "dead_letter", strconv.FormatInt(dl, 10), msgID, "acme", 0)
			require.NoError(t, err)
			var actions []string
			for _, e := range trail {
				actions = append(actions, e.Action)
			}
			require.NotEmpty(t, actions)
			assert.NotEqual(t, "replay.item.requested", actions[len(actions)-1],
				"the dead letter's trail ends at its request; the %s that put it back to quarantined is not on it: %v", tc.action, actions)

			page, err := audit.List(ctx, b.db.Pool, audit.Filter{MessageID: msgID})
			require.NoError(t, err)
			require.NotEmpty(t, page.Entries)
			assert.NotEqual(t, "replay.item.requested", page.Entries[0].Action,
				"the auditor's message-id filter finds no row of the %s of its request", tc.action)
		})
	}
}

// TestRevAudit14ItemTrailOfPartlyApprovedThenRejected: a manual request
// needs two approvers. The first approval writes replay.item.approved
// under each item's dead letter and message id (Approve -> auditItems on
// every approval, not only the one that completes the request), though the
// request is not approved (1 of 2), and the row says nothing of the count.
// The second approver then rejects it: nothing is written under the item
// (TestRevAudit14EndOfPendingRequestOnItsDeadLetter). By message id, and on
// the dead letter's page, the item's last word is "approved", for a replay
// that was refused and never ran; its dead letter is quarantined again.
func TestRevAudit14ItemTrailOfPartlyApprovedThenRejected(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dl := b.seedItem(t, "orders.refund", "refund-14", nil, "{}")
	req := b.request(t, []int64{dl}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY refund-14"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.False(t, d.Ready, "manual: one approval of two")
	require.NoError(t, b.replays.Reject(ctx, req.ID, approver2, replay.RejectInput{IntentHex: req.IntentHex(), Version: req.Version, Reason: "not this refund"}, quarantine.RequestMeta{}))
	r, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusRejected, r.Status)

	trail, err := audit.Trail(ctx, b.db.Pool, "dead_letter", strconv.FormatInt(dl, 10), "refund-14", "acme", 0)
	require.NoError(t, err)
	var actions []string
	for _, e := range trail {
		actions = append(actions, e.Action)
	}
	require.NotEmpty(t, actions)
	assert.NotEqual(t, "replay.item.approved", actions[len(actions)-1],
		"the item's trail ends with \"approved\" for a request that was rejected and never approved: %v", actions)
}
