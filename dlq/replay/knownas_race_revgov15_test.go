package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevGov15ConcurrentApprovalsOfOnePersonLinkedByAnOutsideAccount: the
// round-14 person of three accounts (approver1; a1Mid, seen with
// a1@example.com and then a1-mid@example.com; a1GH, holding
// a1-mid@example.com) approves a manual refund from two of them at once.
// Each Approve reads the request locked (FOR UPDATE), and the one that
// waits for the other's lock reads the request's people (KnownAs, the
// link walk) in the statement that waited: as they were before the other
// approval committed. The other approver is then no person of the request
// to it, their addresses and links unread, and the approvals of one person
// under two accounts complete a two-approver request.
func TestRevGov15ConcurrentApprovalsOfOnePersonLinkedByAnOutsideAccount(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)

	const msgID = "refund-revgov15-race"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-15r"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	require.Equal(t, replay.StatusPendingApproval, req.Status)

	mid := quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "a1-mid", Email: approver1.Email, EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: mid}))
	mid.Email = "a1-mid@example.com"
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: mid}))
	gh := quarantine.Actor{Issuer: "https://github.example", Subject: "a1-gh", Email: mid.Email, EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: gh, Groups: []string{"quarantine:acme:approver"}}))

	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	in := replay.ApproveInput{IntentHex: got.IntentHex(), Confirmation: "REPLAY " + msgID}

	// Both approvals start while something else holds the request's row.
	hold, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer hold.Rollback(ctx) //nolint:errcheck
	_, err = hold.Exec(ctx, `SELECT 1 FROM replay_requests WHERE id = $1 FOR UPDATE`, req.ID)
	require.NoError(t, err)
	done := make(chan error, 2)
	for _, a := range []quarantine.Actor{approver1, gh} {
		go func() {
			_, err := b.replays.Approve(ctx, req.ID, a, in, quarantine.RequestMeta{})
			done <- err
		}()
	}
	// The approvals, each at the request's row (held by hold).
	b.waitLockWaiters(t, "both approvals wait for the request's row", 2)
	require.NoError(t, hold.Rollback(ctx))
	errs := []error{<-done, <-done}

	after, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, after.Status,
		"a manual request needs two distinct approvers; one person under two accounts approved it at once (%v)", errs)
	assert.False(t, errs[0] == nil && errs[1] == nil, "both accounts of one person approved")
}
