package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevFixes5bStartedByAPublishInAnotherClaim: a request starts once a
// publish of it may have landed (replaypolicy.Run.Started: "a worker
// marked the job attempted and stopped before it recorded anything"), and
// from then on its approval's expiry is no longer judged. But the worker
// judges Started from the jobs of its own claim only (judge.go: started
// is "a job of it in this claim was marked attempted"). Worker 1 claims
// job A (the request's rate lets a claim take one job), its gate marks A
// attempted and A is published; worker 1 dies before it records (its
// lease still runs). The approval's expiry passes. Worker 2 claims job B
// of the same request: A is not in its claim, the request still reads
// approved, so B is blocked "the approval expired ... before the replay
// started", though A of it was published, and A will be retried (Started
// in its own claim) after the approval's expiry all the same: one
// request, half published past its expiry, half refused as never started.
func TestRevFixes5bStartedByAPublishInAnotherClaim(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	table, err := replaypolicy.Parse("expiry.toml", []byte(`
[[rule]]
item_type = "analytics.*"
class = "dedupe"
[class.dedupe]
approval_expiry = "1h"
`))
	require.NoError(t, err)
	b.policy.Store(table)

	a := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: "rf5b-a", Subject: "app.acme.events", Payload: []byte("{}")})
	bb := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: "rf5b-b", Subject: "app.acme.events", Payload: []byte("{}")})
	req := b.request(t, []int64{a, bb}, replay.SubmitInput{})
	if req.Status == replay.StatusPendingApproval {
		d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.True(t, d.Ready)
	}
	// B is due later (its slot at the request's rate): worker 1's claim takes A alone.
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() + interval '1 hour' WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, bb)
	require.NoError(t, err)

	// Worker 1 publishes A and dies before it records anything; its lease runs on.
	w1 := b.worker(t, replay.WorkerConfig{Lease: time.Hour})
	w1.AfterPublish(func([]int64) bool { return false })
	_, err = w1.RunOnce(ctx)
	require.ErrorIs(t, err, replay.ErrStopped)
	ja := b.job(t, req.ID, a)
	require.Equal(t, "claimed", ja.State)
	require.NotNil(t, ja.FirstAttemptAt, "A's gate marked it attempted")
	require.Equal(t, 1, b.publishedAs(t, "rf5b-a"), "A was published: the request has started")

	// The approval's expiry passes; B comes due.
	for _, q := range []string{
		`UPDATE replay_approvals SET approved_at = approved_at - interval '2 hours' WHERE request_id = $1`,
		`UPDATE replay_requests SET approved_at = approved_at - interval '2 hours' WHERE id = $1`,
		`UPDATE replay_jobs SET not_before = now() WHERE request_id = $1 AND state = 'pending'`,
	} {
		_, err = b.db.OwnerPool.Exec(ctx, q, req.ID)
		require.NoError(t, err)
	}

	w2 := b.worker(t, replay.WorkerConfig{})
	n, err := w2.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "worker 2 claims B alone (A's lease is worker 1's)")
	jb := b.job(t, req.ID, bb)
	assert.NotContains(t, jb.Result, "approval expired",
		"B is refused as never started though A of its request was published (state %s)", jb.State)
	assert.NotEqual(t, "blocked", jb.State, jb.Result)
}
