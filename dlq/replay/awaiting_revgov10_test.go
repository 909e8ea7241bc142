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
)

// TestRevGov10NavCountCrowdedOutByClassesTheViewerMayNotApprove: the
// navigation's count (Awaiting) reads awaitingRows × most pending requests
// of the viewer's tenants, oldest first, and only then sets aside in Go the
// classes the viewer may not approve. Round 9 fixed exactly this on the
// approvals page (Waiting filters class and tenant in SQL); the count kept
// it. docs/access.md names the set-up: on-call's approvers approve
// same_operation, manual ones go to a separate group. Manual has no bulk,
// so an incident makes one request per item: 4 × (NavCountMost+1) = 400 older
// manual requests hide every same_operation request from its approvers'
// count, which shows none while one waits for them. Here most = 1 (4 rows).
func TestRevGov10NavCountCrowdedOutByClassesTheViewerMayNotApprove(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	for i := range 4 { // older manual requests: a class the viewer may not approve
		id := b.seedItem(t, "orders.refund", fmt.Sprintf("refund-%d", i), nil, `{}`)
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replaypolicy.Manual, req.Class)
		require.Equal(t, replay.StatusPendingApproval, req.Status)
	}
	mail := b.seedItem(t, "email.send", "mail-1", nats.Header{dlq.HeaderOperationID: {"op-mail-1"}}, `{}`)
	req := b.request(t, []int64{mail}, replay.SubmitInput{})
	require.Equal(t, replaypolicy.SameOperation, req.Class)
	require.Equal(t, replay.StatusPendingApproval, req.Status)

	sameOperationOnly := func(_ string, c replaypolicy.Class) bool { return c == replaypolicy.SameOperation }
	page, err := b.replays.Waiting(ctx, replay.WaitingFilter{
		May:   []replay.ClassScope{{Class: replaypolicy.SameOperation, Tenants: []string{"acme"}}},
		Limit: 10})
	require.NoError(t, err)
	require.Len(t, page.Requests, 1, "the approvals page lists the one request that waits for this approver")

	n, err := b.replays.Awaiting(ctx, mayScopes([]string{"acme"}, sameOperationOnly), approver1, 1)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the navigation counts the same_operation request waiting for the viewer; older requests of a class they may not approve crowd it out of the rows read")
}
