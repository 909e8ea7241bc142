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

// TestRevReplay5ExpiryAfterAClaimThatPublishedNothing: an approval is "for
// now, not for whenever workers come back" (JudgeRun; docs/replay.md: a
// worker re-checks "that it started within its approval's expiry"). A
// request is taken as started once its first claim is recorded
// (markRunning in recordOnce), whatever that claim did: here the worker's
// NATS connection is down, so the claim publishes nothing ("not
// published", tried again later), yet the request becomes running. Two
// hours later, past the 1 h expiry, with nothing of the request ever
// published, a worker with a working connection publishes it: the
// approval's expiry is never judged again for a running request.
func TestRevReplay5ExpiryAfterAClaimThatPublishedNothing(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	table, err := replaypolicy.Parse("expiry.toml", []byte(`
[[rule]]
item_type = "analytics.*"
class = "dedupe"
[[rule]]
subject = "app.*.ledger.>"
class = "same_operation"
[class.dedupe]
approval_expiry = "1h"
`))
	require.NoError(t, err)
	b.policy.Store(table)

	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: "rr5-ev-1", OperationID: "rr5-op-1",
		Subject: "app.acme.ledger.post", Payload: []byte("{}")})
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)

	// The first worker's NATS connection is down: its claim judges the job
	// and publishes nothing.
	nc, js := b.ns.Connect(t)
	nc.Close()
	down := b.workerOn(t, js, replay.WorkerConfig{Retry: time.Millisecond})
	n, err := down.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	j := b.job(t, req.ID, id)
	require.Equal(t, "pending", j.State, "not sent: %s", j.Result)
	require.Nil(t, j.FirstAttemptAt, "nothing of it was sent")
	require.Empty(t, streamMsgs(t, b.target), "nothing published")

	// Two hours pass with NATS away; the approval (1 h) has expired, and
	// nothing of the request was ever published.
	for _, q := range []string{
		`UPDATE replay_approvals SET approved_at = approved_at - interval '2 hours' WHERE request_id = $1`,
		`UPDATE replay_requests SET approved_at = approved_at - interval '2 hours' WHERE id = $1`,
		`UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`,
	} {
		_, err = b.db.OwnerPool.Exec(ctx, q, req.ID)
		require.NoError(t, err)
	}

	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitFinished(t, req.ID)
	j = b.job(t, req.ID, id)
	assert.Equal(t, "blocked", j.State, "an approval that expired before anything of the request was published: %s", j.Result)
	assert.Contains(t, j.Result, "the approval expired")
	assert.Empty(t, streamMsgs(t, b.target), "nothing published on an expired approval")
}
