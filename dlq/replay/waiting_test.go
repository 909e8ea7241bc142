package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestWaitingListsWhatTheViewerMayApproveLongestWaitingFirst: the
// approvals page's query selects, in SQL, only the requests of classes and
// tenants the viewer may approve (newer requests of other classes never
// crowd theirs off the page), the longest waiting first (by when they were
// submitted, not made), a page at a time with how many more wait.
func TestWaitingListsWhatTheViewerMayApproveLongestWaitingFirst(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	request := func(tenant, itemType, msgID string, hdr nats.Header) int64 {
		t.Helper()
		id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{Tenant: tenant, ItemType: itemType, MsgID: msgID, Headers: hdr})
		req := testfactory.Request(t, b.replays, oncall, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replay.StatusPendingApproval, req.Status)
		return req.ID
	}
	manual1 := request("acme", "orders.refund", "refund-1", nil)
	var sameOp []int64
	for i := range 3 {
		sameOp = append(sameOp, request("acme", "email.send", fmt.Sprintf("mail-%d", i), nats.Header{dlq.HeaderOperationID: {fmt.Sprintf("op-%d", i)}}))
	}
	manual2 := request("acme", "orders.refund", "refund-2", nil)
	globex := request("globex", "orders.refund", "refund-g", nil)

	ids := func(p replay.WaitingPage) []int64 {
		var out []int64
		for _, r := range p.Requests {
			out = append(out, r.ID)
		}
		return out
	}
	waiting := func(f replay.WaitingFilter) replay.WaitingPage {
		t.Helper()
		p, err := b.replays.Waiting(ctx, f)
		require.NoError(t, err)
		return p
	}
	acmeManual := []replay.ClassScope{{Class: replaypolicy.Manual, Tenants: []string{"acme"}}}

	t.Run("OnlyWhatTheViewerMayApprove", func(t *testing.T) {
		p := waiting(replay.WaitingFilter{May: acmeManual, Limit: 1})
		assert.Equal(t, []int64{manual1}, ids(p), "the longest waiting of theirs, the newer same_operation ones set aside in SQL")
		assert.Equal(t, 1, p.More)
		p = waiting(replay.WaitingFilter{May: acmeManual, After: p.Next(), Limit: 1})
		assert.Equal(t, []int64{manual2}, ids(p), "the page after")
		assert.Zero(t, p.More)
		assert.Zero(t, p.Next(), "no page after the last")
	})
	t.Run("EveryTenant", func(t *testing.T) {
		p := waiting(replay.WaitingFilter{May: []replay.ClassScope{{Class: replaypolicy.Manual, All: true}}, Limit: 10})
		assert.Equal(t, []int64{manual1, manual2, globex}, ids(p))
		p = waiting(replay.WaitingFilter{May: []replay.ClassScope{{Class: replaypolicy.SameOperation, Tenants: []string{"acme"}},
			{Class: replaypolicy.Manual, Tenants: []string{"globex"}}}, Limit: 10})
		assert.Equal(t, append(sameOp, globex), ids(p))
		require.Len(t, p.Requests, 4)
		assert.Equal(t, "0 of 1", p.Requests[0].Count.String(), "completed as the replays list completes its rows")
	})
	t.Run("Nothing", func(t *testing.T) {
		p := waiting(replay.WaitingFilter{Limit: 10})
		assert.Empty(t, p.Requests, "no right to approve anything: nothing listed")
		assert.Zero(t, p.More)
	})
	t.Run("BySubmitted", func(t *testing.T) {
		_, err := b.db.Pool.Exec(ctx, `UPDATE replay_requests SET submitted_at = now() + interval '1 minute' WHERE id = $1`, manual1)
		require.NoError(t, err)
		p := waiting(replay.WaitingFilter{May: acmeManual, Limit: 10})
		assert.Equal(t, []int64{manual2, manual1}, ids(p), "waiting since it was submitted")
	})
}
