package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// listedAs is request id as the replays page lists it for oncall.
func listedAs(t *testing.T, b *replayBundle, id int64) replay.Listed {
	t.Helper()
	page, _, err := b.replays.List(context.Background(), replay.ListFilter{Tenants: []string{"acme"}, Viewer: oncall, Limit: 50})
	require.NoError(t, err)
	for _, l := range page {
		if l.ID == id {
			return l
		}
	}
	t.Fatalf("request %d not listed", id)
	return replay.Listed{}
}

// TestFixGov11ReplaysPageShowsTheStartByOfTheFirstApproval: the replays
// and approvals pages' Expires is what the worker blocks a request after.
// A manual request (approval_expiry 4h) that approver1 approved three
// hours ago waits until approver1's approval lapses; approved by approver2
// now, it may start until that same time (approver1's approval plus 4h),
// not 4h after approver2's approval completed it.
func TestFixGov11ReplaysPageShowsTheStartByOfTheFirstApproval(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "fixgov11-start-by"
	id := b.seedItem(t, "orders.refund", msgID, nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_requests SET submitted_at = submitted_at - interval '6 hours' WHERE id = $1`, req.ID)
	require.NoError(t, err)
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_approvals SET approved_at = approved_at - interval '3 hours' WHERE request_id = $1`, req.ID)
	require.NoError(t, err)
	var first time.Time
	require.NoError(t, b.db.OwnerPool.QueryRow(ctx, `SELECT approved_at FROM replay_approvals WHERE request_id = $1`, req.ID).Scan(&first))
	lapse := first.Add(4 * time.Hour)

	l := listedAs(t, b, req.ID)
	require.NotNil(t, l.Expires, "waiting: approver1's approval lapses")
	assert.WithinDuration(t, lapse, *l.Expires, time.Millisecond)

	d, err := b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	l = listedAs(t, b, req.ID)
	require.Equal(t, replay.StatusApproved, l.Status)
	require.NotNil(t, l.Expires, "approved, not started: it may start until its first approval lapses")
	assert.WithinDuration(t, lapse, *l.Expires, time.Millisecond, "not 4h after the approval that completed it (%s)", l.ApprovedAt)
}
