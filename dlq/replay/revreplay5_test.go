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
	"github.com/quarantine-console/quarantine/testfactory/wait"
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

// TestRevReplay5OwnRetryWaitsBehindAFreshJobOfItsIdentity: two dead letters
// of one message id (dedupe), each in its own request. Job A published its
// first attempt and lost the PubAck (unknown: it must be retried under the
// same id while the window covers it, and the broker's Duplicate then says
// it landed). Job B of the other request, never attempted, is due at the
// same time and comes first in the claim (an older job, say one deferred).
// The claim's judge gives the identity to the first job it reaches
// (ledgerFor: HeldEarlier) before the ledger's rule that lets a job whose
// own publish may have landed go on as its own retry: B waits for A (A is
// in flight), and A waits for B. Both are released with the same
// not_before, so the next claim has them in the same order again: A is
// never retried, and once its window has passed it needs a person
// (needs_reconciliation, and B is blocked behind it), though its publish
// had landed and one retry would have shown it.
func TestRevReplay5OwnRetryWaitsBehindAFreshJobOfItsIdentity(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	d1 := b.seedItem(t, "analytics.event", "rr5-same-id", nil, `{"n":1}`)
	d2 := b.seedItem(t, "analytics.event", "rr5-same-id", nil, `{"n":1}`)

	// B's request first (its job is the older one), not yet due.
	rb := b.request(t, []int64{d2}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, rb.Status)
	_, err := b.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() + interval '1 hour' WHERE request_id = $1`, rb.ID)
	require.NoError(t, err)
	ra := b.request(t, []int64{d1}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, ra.Status)

	// A's first attempt lands; its PubAck is lost.
	first := b.worker(t, replay.WorkerConfig{})
	loseAcks(first, 1)
	n, err := first.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "only A is due")
	require.Equal(t, "unknown", b.job(t, ra.ID, d1).State)
	require.Len(t, streamMsgs(t, b.target), 1, "A's first publish landed")

	// Both due together, B first.
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() - interval '1 second' WHERE request_id = ANY($1)`,
		[]int64{ra.ID, rb.ID})
	require.NoError(t, err)
	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond})
	for claim := 1; claim <= 3; claim++ {
		wait.Until(t, "both jobs due", time.Minute, func() bool {
			var due int
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_jobs WHERE request_id = ANY($1) AND not_before <= now()`,
				[]int64{ra.ID, rb.ID}).Scan(&due))
			return due == 2
		})
		n, err := w.RunOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n, "claim %d holds both jobs", claim)
		if a := b.job(t, ra.ID, d1); a.State != "pending" {
			break
		}
	}
	a := b.job(t, ra.ID, d1)
	assert.Equal(t, "replayed", a.State, "A's own retry goes (the broker's Duplicate is its own publish): %s", a.Result)
	assert.Len(t, streamMsgs(t, b.target), 1, "published once")
}
