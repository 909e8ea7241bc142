package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// auditRow is one audit_log row of a replay test, as an auditor reads it.
type auditRow struct {
	Actor, Action, ObjectID, Reason string
	Before                          map[string]any
}

// auditRowsOf returns the rows of action about object (type, id), oldest first.
func (b *replayBundle) auditRowsOf(t *testing.T, action, objectType, objectID string) []auditRow {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `SELECT actor_email, action, object_id, reason, coalesce(before, 'null')
        FROM audit_log WHERE action = $1 AND object_type = $2 AND object_id = $3 ORDER BY seq`, action, objectType, objectID)
	require.NoError(t, err)
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var r auditRow
		var before []byte
		require.NoError(t, rows.Scan(&r.Actor, &r.Action, &r.ObjectID, &r.Reason, &before))
		require.NoError(t, json.Unmarshal(before, &r.Before))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestApprovedRowSaysWhoApproved: the replay.approved row of a request no
// one needed to approve says the policy let it through (not an approval by
// its requester), and the one of a request its approvers completed says
// so; both name the status it left.
func TestApprovedRowSaysWhoApproved(t *testing.T) {
	t.Parallel()
	t.Run("NoApprovalNeeded", func(t *testing.T) {
		t.Parallel()
		b := setupReplay(t)
		id := b.seedItem(t, "search.index_update", "auto-1", nil, "{}")
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replay.StatusApproved, req.Status, "rebuildable needs no approver")
		rows := b.auditRowsOf(t, "replay.approved", "replay_request", fmt.Sprint(req.ID))
		require.Len(t, rows, 1)
		assert.Equal(t, oncall.Email, rows[0].Actor, "the requester submitted it")
		assert.Contains(t, rows[0].Reason, "no approval needed: class rebuildable asks for none (policy version ")
		assert.Equal(t, map[string]any{"status": string(replay.StatusPendingApproval)}, rows[0].Before)
	})
	t.Run("ApprovalsComplete", func(t *testing.T) {
		t.Parallel()
		b := setupReplay(t)
		ctx := context.Background()
		id := b.seedItem(t, "email.send", "approved-1", nats.Header{dlq.HeaderOperationID: {"op-approved-1"}}, "{}")
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replay.StatusPendingApproval, req.Status)
		d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.True(t, d.Ready)
		rows := b.auditRowsOf(t, "replay.approved", "replay_request", fmt.Sprint(req.ID))
		require.Len(t, rows, 1)
		assert.Equal(t, approver1.Email, rows[0].Actor)
		assert.Equal(t, "approvals complete: 1 of 1", rows[0].Reason)
		assert.Equal(t, map[string]any{"status": string(replay.StatusPendingApproval)}, rows[0].Before)
	})
}

// TestLeftOutItemsAreAudited: every item a request lists has a row of its
// own when it is requested: a requested one replay.item.requested, one the
// rules leave out replay.item.blocked with the rule's reason, in the
// request's transaction.
func TestLeftOutItemsAreAudited(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	fine := b.seedItem(t, "search.index_update", "left-fine", nil, "{}")
	bad := b.seedItem(t, "search.index_update", "left-\xff-id", nil, "{}")
	req := b.request(t, []int64{fine, bad}, replay.SubmitInput{})
	items, err := b.replays.Items(context.Background(), req.ID, 5)
	require.NoError(t, err)
	require.Len(t, items, 2, "the request lists both")

	assert.Len(t, b.auditRowsOf(t, "replay.item.requested", "dead_letter", fmt.Sprint(fine)), 1)
	assert.Empty(t, b.auditRowsOf(t, "replay.item.requested", "dead_letter", fmt.Sprint(bad)))
	blocked := b.auditRowsOf(t, "replay.item.blocked", "dead_letter", fmt.Sprint(bad))
	require.Len(t, blocked, 1, "the left-out item is in the log")
	assert.Equal(t, oncall.Email, blocked[0].Actor)
	for _, it := range items {
		if it.DeadLetterID == bad {
			assert.Equal(t, it.SkipReason, blocked[0].Reason, "the row says why, as the request's page does")
		}
	}
}

// TestVoidRequestItemsAreAudited: a request whose every item is left out
// becomes void, and the log still names each item and why.
func TestVoidRequestItemsAreAudited(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	bad := b.seedItem(t, "search.index_update", "void-\xff-id", nil, "{}")
	batch, drafts := b.draft(t, oncall, bad)
	require.Len(t, drafts, 1)
	reqs, err := b.replays.Submit(context.Background(), batch, oncall, replay.SubmitInput{Reason: "try it"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	require.Equal(t, replay.StatusVoid, reqs[0].Status)
	assert.Len(t, b.auditRowsOf(t, "replay.item.blocked", "dead_letter", fmt.Sprint(bad)), 1)
}
