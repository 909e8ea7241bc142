package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevGov18WorkerBehindTheDatabasePublishesOnStaleApprovers (review
// revgov18): the worker's check that the people a request rests on still
// hold their rights (authz.Authority) takes groups older than a session
// lifetime (DefaultDirectoryMaxAge, 12 h) for nothing. The directory dates
// each entry by the database's clock (user_directory.seen_at = now()); the
// Authority measures its age on the worker's own clock. A worker whose host
// runs three hours behind the database's publishes a manual refund whose
// requester and two approvers were last confirmed by the provider 13 hours
// ago by the database's clock: their groups count for three hours past the
// session lifetime. A worker whose clock is right blocks it. Approvals are
// judged at the later of the two clocks (Service.judgedAt), so that a
// skewed process can only take rights away; people's rights are not.
func TestRevGov18WorkerBehindTheDatabasePublishesOnStaleApprovers(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID = "refund-revgov18-worker-behind"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-18"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	require.Equal(t, 2, req.ApprovalsNeeded, "orders.refund is manual: two approvers")
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	d, err := b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready, d.Reason)

	// The provider last confirmed the three of them 13 hours ago, by the
	// database's clock: longer ago than any session lives.
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE user_directory SET seen_at = now() - interval '13 hours'`)
	require.NoError(t, err)

	// The worker runs on a host whose clock is three hours behind the
	// database's.
	behind := func() time.Time { return time.Now().Add(-3 * time.Hour) }
	auth := authz.Authority{Access: b.auth.Access, Directory: b.auth.Directory, Now: behind}
	w := replay.NewWorker(b.replays, b.js, auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute}, b.log)
	n, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the job is due")
	j := b.job(t, req.ID, id)
	assert.Zero(t, b.publishedAs(t, msgID),
		"a manual refund was published on groups the provider last confirmed 13 h ago (session lifetime 12 h) by a worker whose clock runs 3 h behind the database's: job %s (%s)",
		j.State, j.Result)
	assert.NotEqual(t, "replayed", j.State, j.Result)
}
