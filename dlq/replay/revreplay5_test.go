package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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
// not_before, so the next claim has them in the same order again, for
// good: A is never retried (HeldEarlier comes before the window rule too,
// so not even its window's end hands it to a person), B waits for A, and
// the request runs for ever holding both dead letters, though A's publish
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

// TestRevReplay5RaisedWindowEndsAsSuppressed: the target stream's duplicate
// window is raised (nats stream edit --dupe-window) after the window list
// was read; the list answers first attempts for up to 30 s (DefaultWindowTTL;
// here for the test's length). docs/replay.md: such a change "only moves
// when a first attempt goes (the broker's answer and the read-back catch
// one that goes too early)". The broker does answer Duplicate (the
// original is inside the raised window), but the deferral is computed with
// the list's old window (JudgeAck: kept.StoredAt + a.Window.Duplicates),
// already past, so the job is deferred by the margin only, goes again, is
// dropped again, and after three such answers ends suppressed_duplicate:
// "something else keeps publishing under this id", which nothing does, and
// its dead letter is let go as replay_failed. A Duplicate should be judged
// by the window as the broker holds it (read afresh), deferring the item
// until the original's window has passed.
func TestRevReplay5RaisedWindowEndsAsSuppressed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.analytics.event"
	cfg := b.config(t)
	windows := replay.NewStreamWindows(b.js, time.Hour)
	cfg.Windows = windows
	svc := replay.New(b.db.Pool, cfg)

	// The stream's window is 1 s when the list is read.
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	require.Equal(t, time.Second, windows.Window(ctx, subject).Duplicates)
	// Then it is raised to 10 minutes, and the original is published.
	_, err = b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: 10 * time.Minute})
	require.NoError(t, err)
	_, err = b.js.Publish(ctx, subject, []byte(`{"n":1}`), jetstream.WithMsgID("rr5-raised"))
	require.NoError(t, err)

	id := b.seedItem(t, "analytics.event", "rr5-raised", nil, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, replay.NewWorker(svc, b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute}, b.log))

	// Wait until it ends, or waits for the original's window as the
	// broker holds it (minutes, not the margin).
	wait.Until(t, "the job to end or wait for the original's window", time.Minute, func() bool {
		j := b.job(t, req.ID, id)
		return j.State == "suppressed_duplicate" || j.State == "blocked" || j.State == "replayed" ||
			(j.State == "deferred" && j.NotBefore.After(time.Now().Add(time.Minute)))
	})
	j := b.job(t, req.ID, id)
	assert.Equal(t, "deferred", j.State, "the original is inside the stream's window: wait for it: %s", j.Result)
	assert.NotEqual(t, "suppressed_duplicate", j.State)
	assert.Len(t, streamMsgs(t, b.target), 1, "only the original")
}
