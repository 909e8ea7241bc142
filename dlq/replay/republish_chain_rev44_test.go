package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev44RepublishedReplayExplainsNoDeadLetterThatCameBack: an
// analytics event's replay (dedupe, no approver) lands, its PubAck is
// lost, and past the window it waits for a person. Meanwhile the consumer
// failed on it and dead-lettered it again: C, linked to A. The person
// checks the target, finds no event, and settles the replay "not applied,
// republish": the republish is the event's effect. The replay ledger holds
// one row for the job, which the chain took for the replay C came back
// from, so C was replayed as new: a second effect of one event (review
// round 44). A republished replay now explains no dead letter: C is left
// for a person at its draft, and at execution by a worker; and the
// request's page no longer shows C as a return of the republished item.
func TestRev44RepublishedReplayExplainsNoDeadLetterThatCameBack(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	const msgID, subject = "rev44-ev-1", "app.acme.analytics.event"
	letter := func(at time.Time, replayOf int64) int64 {
		l := testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, CorrelationID: "corr-rev44",
			Payload: []byte(`{"clicks":44}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}
	view := func(id int64) replay.View {
		v, err := b.replays.View(ctx, id, oncall, replay.ViewOptions{Items: 100})
		require.NoError(t, err)
		return v
	}

	a := letter(time.Now().Add(-3*time.Hour), 0)
	first := b.request(t, []int64{a}, replay.SubmitInput{Reason: "analytics gap"})
	lossy := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(lossy, 1<<30)
	wait.Until(t, "A to need reconciliation", time.Minute, func() bool {
		_, err := lossy.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, first.ID, a).State == "needs_reconciliation"
	})
	back := letter(time.Now(), a)
	d, err := b.store.Get(ctx, back)
	require.NoError(t, err)
	require.NotNil(t, d.ReplayOf, "linked: %v", d.Flags)
	require.Contains(t, view(first.ID).CameBack.Items, a, "C came back from the replay's first publish")
	// As if the person checked the target for a minute before deciding:
	// C came back well before their decision (chainSlack apart).
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET first_published_at = first_published_at - interval '1 minute',
        handed_at = handed_at - interval '1 minute' WHERE request_id = $1`, first.ID)
	require.NoError(t, err)
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE dead_letters SET received_at = received_at - interval '1 minute' WHERE id = $1`, back)
	require.NoError(t, err)
	require.Contains(t, view(first.ID).CameBack.Items, a, "C came back from the replay's first publish")

	require.NoError(t, b.replays.Reconcile(ctx, first.ID, a, approver1, replay.ReconcileInput{Choice: replaypolicy.Republish,
		Note: "analytics has no event rev44-ev-1"}, quarantine.RequestMeta{}))
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitFinished(t, first.ID)
	sent := b.onSubject(t, subject)

	check, reason := draftVerdict(t, b, back)
	assert.Equal(t, replaypolicy.CheckLedger, check, "C's event was sent again by the republish (reason %q)", reason)
	assert.Contains(t, reason, "resolve it by hand")
	assert.NotContains(t, view(first.ID).CameBack.Items, a, "C came back before the republish: it is no return of it")

	// A request of C drafted before the republish (as if: the chain read
	// without it) is blocked by the worker that takes its job after.
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET republished_at = NULL WHERE request_id = $1`, first.ID)
	require.NoError(t, err)
	child := b.request(t, []int64{back}, replay.SubmitInput{Reason: "C came back"})
	require.Equal(t, replay.StatusApproved, child.Status)
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET republished_at = now() WHERE request_id = $1`, first.ID)
	require.NoError(t, err)
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	var j jobRow
	wait.Until(t, "C's job to settle", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		j = b.job(t, child.ID, back)
		return j.State != "pending" && j.State != "claimed" && j.State != "deferred"
	})
	assert.Equal(t, "blocked", j.State, j.Result)
	assert.Contains(t, j.Result, "resolve it by hand")
	assert.Equal(t, sent, b.onSubject(t, subject), "C was not published: one effect of the event")
}
