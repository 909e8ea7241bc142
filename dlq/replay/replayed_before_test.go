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
)

// manualRequest submits a manual replay of dead letter id (its typed
// confirmation, two approvals) and returns it approved.
func manualRequest(t *testing.T, b *replayBundle, id int64) replay.Request {
	t.Helper()
	ctx := context.Background()
	batch, drafts := b.draft(t, oncall, id)
	require.Len(t, drafts, 1)
	phrase, err := b.replays.ConfirmationFor(ctx, drafts[0].ID)
	require.NoError(t, err)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "refund failed",
		Confirmations: map[int64]string{drafts[0].ID: phrase}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	req := reqs[0]
	require.Equal(t, replaypolicy.Manual, req.Class)
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: phrase}
	_, err = b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	d, err := b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	return req
}

// draftVerdict drafts dead letter id alone and returns its item's verdict
// and why it is left out ("" when it goes).
func draftVerdict(t *testing.T, b *replayBundle, id int64) (check, reason string) {
	t.Helper()
	_, drafts := b.draft(t, oncall, id)
	require.Len(t, drafts, 1)
	items, err := b.replays.Items(context.Background(), drafts[0].ID, 1)
	require.NoError(t, err)
	require.Len(t, items, 1)
	return items[0].Check, items[0].SkipReason
}

// TestReplayedMessageComesBackOnlyThroughItsChain replays a refund (manual:
// irreversible) and then meets the three ways the same message can come
// back as a dead letter. A second dead letter of it that no replay links
// (the consumer failed on the original twice), or one of another message
// id with the same operation id, is left out at draft, naming the request
// that replayed it: a second refund needs a person. The replay itself
// failing downstream and coming back (Dlq-Replay-Of, linked by ingest) is
// what that replay left undone: it may be replayed, and so may the replay
// of it that comes back in turn (the whole chain up is explained), within
// the generation limit.
func TestReplayedMessageComesBackOnlyThroughItsChain(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	const msgID, opID, subject = "refund-chain-1", "op-refund-chain-1", "app.acme.orders.refund"
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	letter := func(msgID string, at time.Time, replayOf int64) int64 {
		l := testfactory.Letter{ItemType: "orders.refund", MsgID: msgID, OperationID: opID, CorrelationID: "corr-chain",
			Payload: []byte(`{"refund":"r-9","cents":900}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}

	first := letter(msgID, time.Now().Add(-3*time.Hour), 0)
	req := manualRequest(t, b, first)
	b.waitStatus(t, req.ID, replay.StatusDone)
	require.Equal(t, 1, b.onSubject(t, subject))

	t.Run("AnotherDeadLetterOfTheMessage", func(t *testing.T) {
		check, reason := draftVerdict(t, b, letter(msgID, time.Now().Add(-2*time.Hour), 0))
		assert.Equal(t, replaypolicy.CheckLedger, check)
		assert.Contains(t, reason, fmt.Sprintf(`message id %q was already replayed by replay request %d`, msgID, req.ID))
		assert.Contains(t, reason, "resolve it by hand")
	})
	t.Run("AnotherMessageOfTheOperation", func(t *testing.T) {
		check, reason := draftVerdict(t, b, letter("refund-chain-other", time.Now().Add(-2*time.Hour), 0))
		assert.Equal(t, replaypolicy.CheckLedger, check)
		assert.Contains(t, reason, fmt.Sprintf(`operation id %q was already replayed by replay request %d`, opID, req.ID))
	})

	// The replay failed downstream and came back: linked, generation 1.
	back := letter(msgID, time.Now().Add(-time.Hour), first)
	d, err := b.store.Get(ctx, back)
	require.NoError(t, err)
	require.NotNil(t, d.ReplayOf, "linked: %v", d.Flags)
	require.Equal(t, int32(1), d.Generation)
	check, reason := draftVerdict(t, b, back)
	require.Empty(t, reason, "a replay that came back is a new decision (%s)", check)
	again := manualRequest(t, b, back)
	b.waitStatus(t, again.ID, replay.StatusDone)
	assert.Equal(t, 2, b.onSubject(t, subject), "the replay of the replay that came back went out")

	// And that one came back too: generation 2, both replays up its chain
	// explained, at draft and by the worker.
	twice := letter(msgID, time.Now().Add(-time.Minute), back)
	third := manualRequest(t, b, twice)
	b.waitStatus(t, third.ID, replay.StatusDone)
	assert.Equal(t, 3, b.onSubject(t, subject))

	t.Run("TheFirstDeadLetterStaysReplayedOnce", func(t *testing.T) {
		check, reason := draftVerdict(t, b, letter(msgID, time.Now().Add(-30*time.Second), 0))
		assert.Equal(t, replaypolicy.CheckLedger, check)
		assert.Contains(t, reason, fmt.Sprintf("already replayed by replay request %d", req.ID), "the earliest replay is named")
	})
}

// TestManualReplaysApprovedTogetherPublishOnce approves two manual
// requests of two dead letters of one refund before a worker runs either:
// the worker publishes one and blocks the other at execution, naming the
// request that replayed it; nothing is published twice.
func TestManualReplaysApprovedTogetherPublishOnce(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	_, err := b.js.UpdateStream(context.Background(), jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	const msgID, subject = "refund-twice-1", "app.acme.orders.refund"
	var reqs []replay.Request
	for _, at := range []time.Time{time.Now().Add(-2 * time.Hour), time.Now().Add(-time.Hour)} {
		id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "orders.refund", MsgID: msgID, OperationID: "op-twice-1",
			Payload: []byte(`{"refund":"r-2"}`), At: at})
		reqs = append(reqs, manualRequest(t, b, id))
	}
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	var done []replay.Request
	for _, r := range reqs {
		done = append(done, b.waitFinished(t, r.ID))
	}
	assert.Equal(t, 1, b.onSubject(t, subject), "one refund")
	states := map[replay.Status]int{}
	for _, r := range done {
		states[r.Status]++
	}
	assert.Equal(t, map[replay.Status]int{replay.StatusDone: 1, replay.StatusDoneWithProblems: 1}, states)
	for i, r := range done {
		if r.Status == replay.StatusDoneWithProblems {
			other := done[1-i]
			assert.Contains(t, b.jobsText(t, r.ID), fmt.Sprintf("already replayed by replay request %d", other.ID))
		}
	}
}
