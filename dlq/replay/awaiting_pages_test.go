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

// TestAwaitingReadsPastRequestsSetAsideInGo: the rules set aside in Go what
// SQL cannot judge (a request of someone with the viewer's mailbox under
// another identity, SamePerson), and Awaiting reads on past a page of
// those: 4 older requests of the viewer's other account fill the first
// page (most = 1), and the one request of someone else that waits is
// still counted. The approvals page lists the same one.
func TestAwaitingReadsPastRequestsSetAsideInGo(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	for i := range 4 {
		id := b.seedItem(t, "orders.refund", fmt.Sprintf("own-%d", i), nil, `{}`)
		require.Equal(t, replay.StatusPendingApproval, b.request(t, []int64{id}, replay.SubmitInput{}).Status)
	}
	other := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall2", Email: "oncall2@example.com"}
	id := b.seedItem(t, "orders.refund", "theirs", nil, `{}`)
	req := testfactory.Request(t, b.replays, other, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replaypolicy.Manual, req.Class)

	// The viewer: oncall's mailbox, another identity (their second account).
	viewer := quarantine.Actor{Issuer: "https://other.example", Subject: "second", Email: "OnCall@example.com"}
	may := mayScopes([]string{"acme"}, allowAll)
	n, err := b.replays.Awaiting(ctx, may, viewer, 1)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the request waiting for the viewer is counted past a page of their own")
	n, err = b.replays.Awaiting(ctx, may, viewer, 10)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "their own requests are never counted")
	page, err := b.replays.Waiting(ctx, replay.WaitingFilter{May: may, Limit: 10})
	require.NoError(t, err)
	assert.Len(t, page.Requests, 5, "the approvals page lists them all (it marks the viewer's own)")
}
