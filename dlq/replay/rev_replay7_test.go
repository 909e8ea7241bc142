package replay_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// rr7Policy is the shipped policy with every "dedupe" rule turned into
// "rebuildable" (as a policy of an earlier release may have had it).
func rr7Policy(t *testing.T, from, to string) *replaypolicy.Table {
	t.Helper()
	src, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	table, err := replaypolicy.Parse("older.toml", []byte(strings.ReplaceAll(string(src), `class = "`+from+`"`, `class = "`+to+`"`)))
	require.NoError(t, err)
	return table
}

// TestRevReplay7DedupeLedgerIgnoresReplaysMadeUnderAnotherClass:
// severity medium. The dedupe class promises (docs/replay.md, the class
// table) "an item whose message id the ledger already holds is skipped,
// whatever the broker's duplicate window". The ledger's "already
// replayed" question (judge.go ledgerOf, selection.go) only counts rows
// written with dedupe_key = true, i.e. replays whose item was classed
// dedupe WHEN it was replayed. An analytics event replayed while the
// policy classed analytics.* rebuildable (an earlier policy; or the same
// message id under another item type) is in the ledger, published to the
// same subject under the same Nats-Msg-Id, but with dedupe_key = false.
// Once the policy makes analytics.* dedupe (the shipped file), a second
// dead letter of that message id (the consumer dead-lettered the same
// event again, or a replay of it failed downstream) is not skipped: past
// the broker's window it is published again and counted twice downstream,
// the exact double effect the dedupe class exists to prevent.
// Expected: the ledger check for a dedupe item asks for any replay of
// that message id in the tenant that the ledger holds (replay_ledger_msg_idx
// serves it), whatever class it was replayed under; the item is skipped
// "already replayed" and nothing more reaches the subject.
func TestRevReplay7DedupeLedgerIgnoresReplaysMadeUnderAnotherClass(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	shipped := b.policy.Load()
	b.policy.Store(rr7Policy(t, "dedupe", "rebuildable"))

	const msgID, subject = "rr7-event-1", "app.acme.analytics.event"
	first := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, CorrelationID: "corr-rr7",
		Payload: []byte(`{"clicks":1}`), At: time.Now().Add(-2 * time.Hour)})
	req := b.request(t, []int64{first}, replay.SubmitInput{})
	require.Equal(t, replaypolicy.Rebuildable, req.Class)
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	require.Equal(t, 1, b.onSubject(t, subject), "the event was replayed once")

	// The policy of this release classes analytics events dedupe. The
	// same event is dead-lettered again.
	b.policy.Store(shipped)
	second := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, CorrelationID: "corr-rr7",
		Payload: []byte(`{"clicks":1}`), At: time.Now().Add(-time.Hour)})
	batch, _ := b.draft(t, oncall, second)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "consumer fixed"}, quarantine.RequestMeta{})
	if err == nil {
		for _, r := range reqs {
			require.Equal(t, replaypolicy.Dedupe, r.Class)
			if r.Status == replay.StatusApproved {
				b.waitFinished(t, r.ID)
			}
		}
	}
	assert.Equal(t, 1, b.onSubject(t, subject),
		"message id %s was replayed already (the ledger holds it), yet the dedupe item was published again: two effects of one event", msgID)
}

// TestRevReplay7UnreadableKeptMessageOnRetryIsNotProofOfOurs: severity
// medium. A first publish is dropped by the broker as a duplicate of a
// message that is not this replay's (anything else that published under
// the same Nats-Msg-Id inside the window: the producer's outbox sending
// the original again, another request's replay of a second dead letter of
// that id), and its PubAck is lost on the way back: the job is unknown and
// retried under the same id. The broker answers Duplicate again; the
// message it keeps is gone by then (the target is a work-queue or
// interest stream whose consumer took it, or max-msgs-per-subject rolled
// it) or cannot be read in 2 s. JudgeAck then says "replayed: ... the
// first attempt was made after the original's duplicate window, so it is
// this replay's own publish" (replaypolicy/delivery.go, the
// Kept.Unreadable case): nothing of this replay was ever stored, yet the
// item, its dead letter and the request read replayed, the ledger holds
// it (a dedupe or same_operation identity is then skipped for good), and
// nobody is asked to check the target. Invariant 13: "replayed" means
// the broker stored OUR publish; an unreadable kept message proves
// nothing about whose it was.
// Expected: an unreadable kept message on a retry is not taken as ours:
// the job needs reconciliation (a person checks the target), never
// replayed on an assumption.
func TestRevReplay7UnreadableKeptMessageOnRetryIsNotProofOfOurs(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID, subject = "rr7-kept-gone", "app.acme.search.index_update"
	id := b.seedItem(t, "search.index_update", msgID, nil, `{"doc":"ours"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	// Something else publishes under the same message id, inside the
	// window, before the replay goes.
	other := nats.NewMsg(subject)
	other.Data = []byte(`{"doc":"not ours"}`)
	ack, err := b.js.PublishMsg(ctx, other, jetstream.WithMsgID(msgID))
	require.NoError(t, err)
	require.False(t, ack.Duplicate)

	// The replay's first publish is dropped as a duplicate of it; that
	// PubAck is lost.
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	j := b.job(t, req.ID, id)
	require.Equal(t, "unknown", j.State, j.Result)

	// The other message is consumed (work-queue target) before the retry:
	// its id stays in the window.
	require.NoError(t, b.target.DeleteMsg(ctx, ack.Sequence))
	wait.Until(t, "the retry", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, req.ID, id).State != "unknown"
	})
	ours := 0
	for _, m := range streamMsgs(t, b.target) {
		if m.Header.Get(replay.HeaderReplayOf) == strconv.FormatInt(id, 10) {
			ours++
		}
	}
	require.Zero(t, ours, "nothing of this replay was ever stored")
	j = b.job(t, req.ID, id)
	var status string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&status))
	assert.NotEqual(t, "replayed", j.State, "the broker never stored this replay's publish, yet the item reads: %s", j.Result)
	assert.NotEqual(t, "replayed", status, "the dead letter reads replayed")
}

// TestRevReplay7ManualReplayOfAMessageAlreadyReplayedGoesOutAgain:
// severity medium (a gap of the same kind as the dedupe ledger above). The
// same original message can be dead-lettered twice (the consumer
// dead-letters it, later fails on it again; or a replay of it fails
// again downstream and comes back under the same message id). Two
// requests of the manual class (irreversible: a refund), each approved by
// two approvers, publish it twice under one Nats-Msg-Id and one
// Dlq-Operation-Id once the broker's window has passed: two refunds. The
// ledger holds the first replay of that id and operation (replay_ledger,
// by msg_id), but only dedupe and same_operation items ever consult it; a
// manual item, the strictest class, is published again without anyone
// being told it was replayed before (draft, approval and worker are
// silent).
// Expected: an item whose message id or operation id the ledger already
// holds as replayed in the tenant is not published again silently: left
// out at draft/submit naming the request that replayed it, or skipped /
// blocked by the worker (a person may then resolve it by hand); never a
// second publish nobody was told about.
func TestRevReplay7ManualReplayOfAMessageAlreadyReplayedGoesOutAgain(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	const msgID, opID, subject = "rr7-refund-1", "op-refund-1", "app.acme.orders.refund"
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	replayed := 0
	for i, at := range []time.Time{time.Now().Add(-2 * time.Hour), time.Now().Add(-time.Hour)} {
		id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "orders.refund", MsgID: msgID, OperationID: opID,
			CorrelationID: "corr-rr7-refund", Payload: []byte(`{"refund":"r-1","cents":5000}`), At: at})
		batch, drafts := b.draft(t, oncall, id)
		require.Len(t, drafts, 1)
		phrase, err := b.replays.ConfirmationFor(ctx, drafts[0].ID)
		require.NoError(t, err)
		reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "refund failed",
			Confirmations: map[int64]string{drafts[0].ID: phrase}}, quarantine.RequestMeta{})
		if err != nil || len(reqs) != 1 || reqs[0].Status != replay.StatusPendingApproval {
			require.Equal(t, 1, i, "the first replay is requested: %v", err)
			break // the second is refused: the promise holds
		}
		req := reqs[0]
		require.Equal(t, replaypolicy.Manual, req.Class)
		in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: phrase}
		_, err = b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
		require.NoError(t, err)
		d, err := b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
		if i == 1 && (err != nil || !d.Ready) {
			break
		}
		require.NoError(t, err)
		require.True(t, d.Ready)
		if r := b.waitFinished(t, req.ID); r.Status == replay.StatusDone {
			if j := b.job(t, req.ID, id); j.State == "replayed" {
				replayed++
			}
		}
	}
	assert.Equal(t, 1, b.onSubject(t, subject), "refund %s (operation %s) was published %d times, replayed by %d requests",
		msgID, opID, b.onSubject(t, subject), replayed)
}
