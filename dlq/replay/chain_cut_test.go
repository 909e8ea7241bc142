package replay_test

import (
	"context"
	"fmt"
	"slices"
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

// TestReturnedReplayWhoseChainRetentionCutIsBlockedAtExecution: an
// analytics event (dedupe) A is replayed, fails downstream and comes back
// as B, which is replayed and fails again as C. C is requested while its
// chain is whole (its draft lets it go); before a worker runs it,
// retention removes A and B. The worker cannot tell any more whether the
// ledger's replay of A is one its chain explains: it blocks C for a
// person, naming the request and the cut, instead of skipping it as
// already replayed (which would end the request green with the event
// lost), and publishes nothing.
func TestReturnedReplayWhoseChainRetentionCutIsBlockedAtExecution(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	const msgID, subject = "chain-cut-1", "app.acme.analytics.event"
	letter := func(at time.Time, replayOf int64) int64 {
		l := testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, Payload: []byte(`{"clicks":3}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	settled := func(req replay.Request, id int64) string {
		var state string
		wait.Until(t, fmt.Sprintf("the job of %d to settle", id), time.Minute, func() bool {
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)
			state = b.job(t, req.ID, id).State
			return state != "pending" && state != "claimed" && state != "deferred"
		})
		return state
	}
	replayOnce := func(id int64) replay.Request {
		req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "consumer fixed"})
		require.Equal(t, replay.StatusApproved, req.Status)
		return req
	}

	a := letter(time.Now().Add(-72*time.Hour), 0)
	first := replayOnce(a)
	require.Equal(t, "replayed", settled(first, a))
	back := letter(time.Now().Add(-48*time.Hour), a)
	require.Equal(t, "replayed", settled(replayOnce(back), back))
	again := letter(time.Now().Add(-time.Hour), back)
	check, reason := draftVerdict(t, b, again)
	require.Empty(t, check, "its chain is whole: both replays up it are explained (%s)", reason)
	last := replayOnce(again)

	for _, id := range []int64{a, back} { // as retention's deleteBatch removes them
		_, err := b.db.OwnerPool.Exec(ctx, `WITH gone AS (DELETE FROM dead_letters WHERE id = $1 RETURNING id, dead_lettered_at, tenant, msg_id, generation)
            UPDATE replay_items i SET payload = NULL, origin_tenant = g.tenant, origin_msg_id = g.msg_id, origin_generation = g.generation
            FROM gone g WHERE i.dead_letter_id = g.id AND i.dead_lettered_at = g.dead_lettered_at`, id)
		require.NoError(t, err)
	}

	assert.Equal(t, "blocked", settled(last, again))
	j := b.job(t, last.ID, again)
	assert.Contains(t, j.Result, fmt.Sprintf("already replayed by replay request %d", first.ID))
	assert.Contains(t, j.Result, fmt.Sprintf("retention removed dead letter %d", back))
	assert.Equal(t, 2, b.onSubject(t, subject), "nothing more was published")
	assert.Equal(t, replay.StatusDoneWithProblems, b.waitFinished(t, last.ID).Status, "not green: the event's effect is for a person")
}

// TestOriginReplayedAgainBlocksItsApprovedChildAtExecution is the worker's
// side of TestRevFixes7cOriginReplayedAgainAfterItsChildCameBack: the
// dead letter B that came back from a refund's first replay (PubAck lost,
// settled "not applied") is requested and approved while nothing else
// replayed the refund, and its job is due later; meanwhile a new request
// replays the origin again and applies it. When B's job comes due, the
// worker counts that later replay against it (the chain explains only
// the origin's first replay) and blocks it, naming that request: one
// refund, not two.
func TestOriginReplayedAgainBlocksItsApprovedChildAtExecution(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	const msgID, opID, subject = "chain-again-1", "chain-again-op-1", "app.acme.orders.refund"
	letter := func(at time.Time, replayOf int64) int64 {
		l := testfactory.Letter{ItemType: "orders.refund", MsgID: msgID, OperationID: opID, Payload: []byte(`{"refund":"r-again"}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}
	settle := func(w *replay.Worker, req replay.Request, id int64, states ...string) jobRow {
		var j jobRow
		wait.Until(t, fmt.Sprintf("the job of %d in request %d to be one of %v", id, req.ID, states), time.Minute, func() bool {
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)
			j = b.job(t, req.ID, id)
			return slices.Contains(states, j.State)
		})
		return j
	}

	a := letter(time.Now().Add(-3*time.Hour), 0)
	first := manualRequest(t, b, a)
	lossy := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(lossy, 1<<30)
	settle(lossy, first, a, "needs_reconciliation")
	back := letter(time.Now(), a)
	d, err := b.store.Get(ctx, back)
	require.NoError(t, err)
	require.NotNil(t, d.ReplayOf, "linked: %v", d.Flags)
	require.NoError(t, b.replays.Reconcile(ctx, first.ID, a, approver1, replay.ReconcileInput{Choice: replaypolicy.NotApplied,
		Note: "payments has no refund r-again"}, quarantine.RequestMeta{}))

	// B is approved while nothing replayed the refund; its job is due later.
	child := manualRequest(t, b, back)
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() + interval '1 hour' WHERE request_id = $1`, child.ID)
	require.NoError(t, err)

	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	b.forgotten(t, msgID, time.Second)
	again := manualRequest(t, b, a)
	settle(w, again, a, "replayed")
	require.Equal(t, 2, b.onSubject(t, subject))

	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, child.ID)
	require.NoError(t, err)
	j := settle(w, child, back, "blocked", "replayed", "skipped")
	assert.Equal(t, "blocked", j.State, j.Result)
	assert.Contains(t, j.Result, fmt.Sprintf("already replayed by replay request %d", again.ID))
	assert.Equal(t, 2, b.onSubject(t, subject), "one refund applied, not two")
}
