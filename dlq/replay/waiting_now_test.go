package replay_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestWaitingReadsRequesterNow: the approvals page's rows carry their
// requester as the directory has them now, so the page marks as the
// viewer's own (Request.MayApprove) a request Approve refuses them: the
// requester's identity now has the viewer's address.
func TestWaitingReadsRequesterNow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "email.send", "waiting-now", nats.Header{dlq.HeaderOperationID: {"op-waiting-now"}}, `{}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)

	nowI1 := oncall
	nowI1.Email, nowI1.EmailVerified = "erin@example.com", true
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: nowI1, Groups: []string{"quarantine:acme:oncall"}}))
	viewer := quarantine.Actor{Issuer: "https://github.example", Subject: "erin-gh", Email: "erin@example.com", EmailVerified: true}

	all := func(string, replaypolicy.Class) bool { return true }
	page, err := b.replays.Waiting(ctx, replay.WaitingFilter{May: mayScopes([]string{"acme"}, all), Limit: 10})
	require.NoError(t, err)
	require.Len(t, page.Requests, 1)
	got := page.Requests[0].Request
	assert.Equal(t, "erin@example.com", got.RequesterNow.Email)
	assert.Equal(t, replaypolicy.Block, got.MayApprove(viewer, quarantine.Actor{}).Outcome)
	assert.Equal(t, replaypolicy.Block, got.MayReconcile(viewer, quarantine.Actor{}).Outcome)
	assert.Equal(t, replaypolicy.Go, got.MayApprove(approver1, quarantine.Actor{}).Outcome)
}
