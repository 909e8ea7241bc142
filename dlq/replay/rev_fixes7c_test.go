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
