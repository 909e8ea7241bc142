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

// TestRevFixes7cOriginReplayedAgainAfterItsChildCameBack: severity high.
// The ledger's chain exception (dlq/replay/ledger.go origins, used at
// draft, submit, approval, claim and the publish gate) leaves out EVERY
// ledger row of an origin of the item, whenever it was made. Its premise
// ("a replay of one of its origins is the replay whose effect failed and
// came back as this dead letter") holds only of a replay of the origin
// published before the item came back. Path: a refund (manual, two
// approvers) is replayed; its PubAck is lost and past the window it needs
// a person. Meanwhile the replay failed downstream and came back as dead
// letter B (Dlq-Replay-Of: A, linked: A's job was published). The person
// checks the target, finds no refund, and settles A "not applied, leave
// it" (the documented way: A goes back to quarantine "for a new request
// of its own"). A and B now stand for the same undone refund. A new
// request replays A (two approvals): the refund is applied, the ledger
// holds A's replay. Then B is drafted: the ledger's replay of A, made
// AFTER B came back, is skipped as "B's origin's", so B is neither left
// out nor blocked and its two approvers see nothing; the worker publishes
// it: a second refund. Expected: only a replay of an origin published
// before the item was dead-lettered is explained by the chain (e.g.
// l.published_at, or the origin job's first_published_at, earlier than
// the item's dead_lettered_at); a later replay of the origin counts, and
// B is left out at draft naming that request (and blocked at execution).
func TestRevFixes7cOriginReplayedAgainAfterItsChildCameBack(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	const msgID, opID, subject = "rf7c-refund-1", "rf7c-op-1", "app.acme.orders.refund"
	letter := func(at time.Time, replayOf int64) int64 {
		l := testfactory.Letter{ItemType: "orders.refund", MsgID: msgID, OperationID: opID, CorrelationID: "corr-rf7c",
			Payload: []byte(`{"refund":"r-7c","cents":700}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}

	// A's replay lands, its PubAck is lost: past the window it needs a person.
	a := letter(time.Now().Add(-3*time.Hour), 0)
	first := manualRequest(t, b, a)
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1<<30)
	wait.Until(t, "A to need reconciliation", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, first.ID, a).State == "needs_reconciliation"
	})
	require.Equal(t, 1, b.onSubject(t, subject))

	// The consumer failed on that replay: it comes back as B, linked to A.
	back := letter(time.Now(), a)
	d, err := b.store.Get(ctx, back)
	require.NoError(t, err)
	require.NotNil(t, d.ReplayOf, "linked: %v", d.Flags)

	// The person finds no refund in the target: not applied, leave it.
	require.NoError(t, b.replays.Reconcile(ctx, first.ID, a, approver1, replay.ReconcileInput{Choice: replaypolicy.NotApplied,
		Note: "payments has no refund r-7c"}, quarantine.RequestMeta{}))

	// A is requested again with two approvals of its own: the refund is applied.
	b.forgotten(t, msgID, time.Second)
	again := manualRequest(t, b, a)
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, again.ID, replay.StatusDone)
	require.Equal(t, 2, b.onSubject(t, subject), "the first publish (failed downstream) and A's replay (applied)")

	// B stands for the same refund, now applied: it must not go out again.
	check, reason := draftVerdict(t, b, back)
	assert.Equal(t, replaypolicy.CheckLedger, check,
		"dead letter %d came back from a replay of %d made before request %d replayed %d again; that later replay is not what it left undone (reason %q)",
		back, a, again.ID, a, reason)
	if check == "" {
		third := manualRequest(t, b, back)
		b.waitFinished(t, third.ID)
	}
	assert.Equal(t, 2, b.onSubject(t, subject), "a second refund went out: B was replayed after A's own replay applied it")
}

// TestRevFixes7cPurgedOriginMakesReturnedReplaySkippedAsDone: severity
// medium. The chain walk (ledger.go origins, readOrigins) stops at an
// origin retention removed: the replays of the origins above it then
// count against the item. Its comment says the item is then "left for a
// person, never published twice"; for dedupe and same_operation it is
// not: JudgeItem/JudgeJob skip it as done ("already replayed
// successfully ... skipped, not re-sent"), its request ends done (green),
// and the effect its replay chain failed to make never happens, with
// nothing to say so. Path: an analytics event (dedupe, one operator, no
// approver) A is replayed; that replay fails downstream and comes back as
// B (Dlq-Replay-Of: A); B is replayed and fails again as C (Dlq-Replay-Of:
// B, generation 2, still under the limit of 3). Retention removes A and B
// (older, replayed, their requests closed), keeping C. C is drafted: its
// chain is known up to B only, so A's replay (request 1) counts and C is
// "skipped": the request is done, nothing is published, the event is
// lost. Expected: an item whose chain cannot be followed to its end is
// never reported replayed on a replay its chain may explain: it is left
// for a person (blocked, naming the request and that the chain was cut by
// retention), or the chain is kept (e.g. retention writes the purged
// dead letter's own replay_of on the items naming it, as it writes
// origin_msg_id, and the walk reads it).
func TestRevFixes7cPurgedOriginMakesReturnedReplaySkippedAsDone(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	const msgID, subject = "rf7c-event-1", "app.acme.analytics.event"
	letter := func(at time.Time, replayOf int64) int64 {
		l := testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, CorrelationID: "corr-rf7c-ev",
			Payload: []byte(`{"clicks":7}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	replayOnce := func(id int64) replay.Request {
		req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "consumer fixed"})
		require.Equal(t, replaypolicy.Dedupe, req.Class)
		require.Equal(t, replay.StatusApproved, req.Status)
		return b.waitStatus(t, req.ID, replay.StatusDone)
	}

	a := letter(time.Now().Add(-72*time.Hour), 0)
	first := replayOnce(a)
	back := letter(time.Now().Add(-48*time.Hour), a)
	replayOnce(back)
	require.Equal(t, 2, b.onSubject(t, subject))
	again := letter(time.Now().Add(-time.Hour), back)
	d, err := b.store.Get(ctx, again)
	require.NoError(t, err)
	require.Equal(t, int32(2), d.Generation, "linked: %v", d.Flags)

	// Retention removes A and B as its deleteBatch does: the items naming
	// them keep their tenant, message id and generation, the rows go.
	for _, id := range []int64{a, back} {
		_, err := b.db.OwnerPool.Exec(ctx, `WITH gone AS (DELETE FROM dead_letters WHERE id = $1 RETURNING id, dead_lettered_at, tenant, msg_id, generation)
            UPDATE replay_items i SET payload = NULL, origin_tenant = g.tenant, origin_msg_id = g.msg_id, origin_generation = g.generation
            FROM gone g WHERE i.dead_letter_id = g.id AND i.dead_lettered_at = g.dead_lettered_at`, id)
		require.NoError(t, err)
	}

	check, reason := draftVerdict(t, b, again)
	assert.NotContains(t, reason, "already replayed successfully",
		"dead letter %d is what its chain's last replay left undone, yet it is skipped as done on request %d's replay of %d, which its cut chain explains",
		again, first.ID, a)
	t.Logf("C at draft: check %q, reason %q", check, reason)
}

// TestRevFixes7cReservedNeverSentJobStartsRequestForAnotherWorker:
// severity medium. fix-poison7's publish gate re-checks the approval's
// expiry right before a send "while nothing of the request was published"
// (approvalHolds), and a claim judges that from selectStarted: a job of
// the request with first_attempt_at set. But the gate sets
// first_attempt_at when it RESERVES a job's slot, before the expiry is
// checked again and before anything is sent; it is cleared only when that
// claim records its release. In between, another worker's claim of the
// same request reads the request as started, so the approval's expiry no
// longer bounds it (ApprovalLapse is zero once Started), and it publishes.
// Path (two workers, the design's scale-out): worker 1 reserves job 1 of a
// two-item request and waits for its slot; the approval expires; worker 2
// claims job 2, judges the request "started" and publishes it; worker 1
// then sees the expiry and releases job 1 unsent. Nothing of the request
// was published before its approval expired, yet job 2 was published
// after. Expected: an approval that expired before anything of the
// request was sent publishes nothing, whichever worker holds which job
// (e.g. "started" counts only publishes handed to NATS, as recorded, or the
// gate's SQL refuses to reserve a job of a request whose approval lapsed
// unless a publish of it was recorded).
func TestRevFixes7cReservedNeverSentJobStartsRequestForAnotherWorker(t *testing.T) {
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
	var ids []int64
	for _, m := range []string{"rf7c-exp-1", "rf7c-exp-2"} {
		ids = append(ids, testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: m,
			Subject: "app.acme.events", Payload: []byte("{}")}))
	}
	req := b.request(t, ids, replay.SubmitInput{})
	if req.Status == replay.StatusPendingApproval {
		d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.True(t, d.Ready)
	}

	w1 := b.worker(t, replay.WorkerConfig{Batch: 1, Retry: time.Millisecond})
	w2 := b.worker(t, replay.WorkerConfig{Batch: 1, Retry: time.Millisecond})
	var other int
	w1.BeforeSend(func(int64, time.Time) {
		if other != 0 {
			return
		}
		later := time.Now().Add(2 * time.Hour) // past the 1h expiry, before anything was sent
		b.now.Store(&later)
		n, err := w2.RunOnce(ctx)
		require.NoError(t, err)
		other = n + 1
	})
	n, err := w1.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 2, other, "worker 2 claimed the other job while worker 1 waited for its slot")
	for _, id := range ids {
		j := b.job(t, req.ID, id)
		t.Logf("job of %d: %s (%s)", id, j.State, j.Result)
	}
	assert.Empty(t, streamMsgs(t, b.target), "a job was published after the approval expired, though nothing of the request had been sent before")
}
