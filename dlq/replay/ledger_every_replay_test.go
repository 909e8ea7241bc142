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
	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// twins is a message replayed once (first, by request r1) whose replay
// failed downstream at two consumers: two dead letters came back, a and
// b, both linked to the origin.
type twins struct {
	origin, a, b int64
	r1           replay.Request
}

// returnedTwins makes twins of item type itemType (message id msgID,
// operation id opID), on a target whose duplicate window is a second, the
// first replay run by w until it is done; approver1 approves it when its
// class asks for an approver.
func returnedTwins(t *testing.T, b *replayBundle, w *replay.Worker, itemType, msgID, opID string) twins {
	t.Helper()
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	letter := func(at time.Time, replayOf int64) int64 {
		l := testfactory.Letter{ItemType: itemType, MsgID: msgID, OperationID: opID, CorrelationID: "corr-" + msgID,
			Payload: []byte(`{"n":1}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}
	var tw twins
	tw.origin = letter(time.Now().Add(-3*time.Hour), 0)
	tw.r1 = approved(t, b, b.request(t, []int64{tw.origin}, replay.SubmitInput{}))
	claimUntil(t, b, w, tw.r1.ID, replay.StatusDone)
	tw.a = letter(time.Now().Add(-2*time.Hour), tw.origin)
	tw.b = letter(time.Now().Add(-2*time.Hour+time.Minute), tw.origin)
	for _, id := range []int64{tw.a, tw.b} {
		d, err := b.store.Get(ctx, id)
		require.NoError(t, err)
		require.NotNil(t, d.ReplayOf, "linked to its origin: %v", d.Flags)
	}
	return tw
}

// approved is req once approver1 approved it, where it waits for an
// approval.
func approved(t *testing.T, b *replayBundle, req replay.Request) replay.Request {
	t.Helper()
	if req.Status == replay.StatusPendingApproval {
		d, err := b.replays.Approve(context.Background(), req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.True(t, d.Ready)
		req.Status = replay.StatusApproved
	}
	require.Equal(t, replay.StatusApproved, req.Status)
	return req
}

// claimUntil runs w's claims until request id is want.
func claimUntil(t *testing.T, b *replayBundle, w *replay.Worker, id int64, want replay.Status) {
	t.Helper()
	ctx := context.Background()
	wait.For(t, fmt.Sprintf("request %d to be %s", id, want), 2*time.Minute, func() error {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		r, err := b.replays.Request(ctx, id)
		require.NoError(t, err)
		if r.Status == want {
			return nil
		}
		return fmt.Errorf("it is %s (%s); its jobs: %s", r.Status, r.StatusReason, b.jobsText(t, id))
	})
}

// ledgerRows are request id's rows in the ledger: its dead letters, each
// with its dedupe_key and operation_key flags.
func ledgerRows(t *testing.T, b *replayBundle, id int64) map[int64][2]bool {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `SELECT dead_letter_id, dedupe_key, operation_key FROM replay_ledger WHERE request_id = $1`, id)
	require.NoError(t, err)
	defer rows.Close()
	out := map[int64][2]bool{}
	for rows.Next() {
		var dl int64
		var dedupe, operation bool
		require.NoError(t, rows.Scan(&dl, &dedupe, &operation))
		out[dl] = [2]bool{dedupe, operation}
	}
	require.NoError(t, rows.Err())
	return out
}

// TestLedgerKeepsEveryReplayOfAReturnedSameOperationItem: an email
// (same_operation) replayed once came back twice from that replay; one of
// the two is replayed (approved, stored by the broker): the ledger holds
// that replay beside the first, keyed by its operation id as well, and the
// other one is left out at draft as already replayed by it, not sent as a
// second email.
func TestLedgerKeepsEveryReplayOfAReturnedSameOperationItem(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	const subject = "app.acme.email.send"
	tw := returnedTwins(t, b, w, "email.send", "le8-mail", "op-le8-mail")
	require.Equal(t, replaypolicy.SameOperation, tw.r1.Class)
	require.Equal(t, 1, b.onSubject(t, subject))

	r2 := approved(t, b, b.request(t, []int64{tw.a}, replay.SubmitInput{}))
	claimUntil(t, b, w, r2.ID, replay.StatusDone)
	require.Equal(t, 2, b.onSubject(t, subject))
	assert.Equal(t, map[int64][2]bool{tw.origin: {false, true}}, ledgerRows(t, b, tw.r1.ID))
	assert.Equal(t, map[int64][2]bool{tw.a: {false, true}}, ledgerRows(t, b, r2.ID), "the second replay of the operation is in the ledger, keyed by it")

	check, reason := draftVerdict(t, b, tw.b)
	assert.Equal(t, replaypolicy.CheckLedger, check)
	assert.Contains(t, reason, fmt.Sprintf("already replayed successfully by replay request %d", r2.ID))
}

// TestLedgerKeepsAReturnedItemSettledApplied: of the twins that came back
// from one replay of an event, one is replayed again and its outcome is
// unknown; a person finds it applied. The ledger holds that replay (the
// first one's row, of the same message id, no longer keeps it out), so the
// other twin is left out at draft as already applied by it (as the person
// found: no broker confirmed that replay).
func TestLedgerKeepsAReturnedItemSettledApplied(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	tw := returnedTwins(t, b, w, "analytics.event", "le8-applied", "")

	r2 := b.request(t, []int64{tw.a}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, r2.Status)
	testfactory.NeedsPerson(t, b.db.Pool, r2.ID)
	require.NoError(t, b.replays.Reconcile(ctx, r2.ID, tw.a, approver1,
		replay.ReconcileInput{Choice: replaypolicy.Applied, Note: "the sink counted the event"}, quarantine.RequestMeta{}))
	assert.Equal(t, map[int64][2]bool{tw.a: {true, false}}, ledgerRows(t, b, r2.ID), "settled applied: in the ledger")

	check, reason := draftVerdict(t, b, tw.b)
	assert.Equal(t, replaypolicy.CheckLedger, check)
	// No broker confirmed that replay: the twin is left out as applied, as
	// the person found, never as replayed (round 35).
	assert.Contains(t, reason, fmt.Sprintf("already applied, as a person found of its replay by replay request %d", r2.ID))
	assert.NotContains(t, reason, "replayed successfully")
}

// TestGateKeepsOneIdentityPublishedOnceWithoutAUniqueKey: the ledger has
// no unique key on an identity (migration 0045); two requests of one
// event's two dead letters, approved before either runs, are still
// published once. Worker 1 judges its job; before its publish gate,
// worker 2 claims the other job, publishes and records it; worker 1's
// gate reads the ledger again under the identity's lock and skips its job
// as already replayed by the other request.
func TestGateKeepsOneIdentityPublishedOnceWithoutAUniqueKey(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID, subject = "le8-gate", "app.acme.analytics.event"
	var reqs []replay.Request
	for _, at := range []time.Time{time.Now().Add(-2 * time.Hour), time.Now().Add(-time.Hour)} {
		id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, Payload: []byte(`{"n":1}`), At: at})
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replay.StatusApproved, req.Status)
		reqs = append(reqs, req)
	}
	w1 := b.worker(t, replay.WorkerConfig{Batch: 1, Retry: 20 * time.Millisecond})
	w2 := b.worker(t, replay.WorkerConfig{Batch: 1, Retry: 20 * time.Millisecond})
	other := -1 // jobs worker 2 ran while worker 1 waited between its judging and its gate
	w1.AfterJudge(func() {
		if other >= 0 {
			return
		}
		n, err := w2.RunOnce(ctx)
		require.NoError(t, err)
		other = n
	})
	n, err := w1.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 1, other, "worker 2 ran the other job between worker 1's judging and its gate")

	done := map[int64]replay.Request{}
	for _, r := range reqs {
		done[r.ID] = b.waitFinished(t, r.ID)
	}
	assert.Equal(t, 1, b.onSubject(t, subject), "one event published once")
	var rows int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_ledger WHERE msg_id = $1`, msgID).Scan(&rows))
	assert.Equal(t, 1, rows, "one replay stored, one ledger row")
	first, second := reqs[0], reqs[1]
	if b.jobStates(t, first.ID)["replayed"] == 1 {
		first, second = second, first // first: the one skipped
	}
	assert.Equal(t, map[string]int{"skipped": 1}, b.jobStates(t, first.ID))
	assert.Equal(t, map[string]int{"replayed": 1}, b.jobStates(t, second.ID))
	assert.Contains(t, b.jobsText(t, first.ID), fmt.Sprintf("already replayed by replay request %d", second.ID))
}

// TestLedgerDownMigrationKeepsEveryReplay: migration 0045's down file
// makes the unique keys of before it again on a ledger holding two
// replays of one message id, and keeps both rows: the later one loses its
// key flag, which no reader asks for.
func TestLedgerDownMigrationKeepsEveryReplay(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	tw := returnedTwins(t, b, w, "analytics.event", "le8-down", "")
	r2 := b.request(t, []int64{tw.a}, replay.SubmitInput{})
	claimUntil(t, b, w, r2.ID, replay.StatusDone)

	all, err := migrations.All()
	require.NoError(t, err)
	var m migrations.Migration
	for _, x := range all {
		if x.Number == 45 {
			m = x
		}
	}
	require.Equal(t, "replay_ledger_every_replay", m.Name)
	_, err = b.db.OwnerPool.Exec(ctx, m.Down)
	require.NoError(t, err, "the down file runs on a ledger with two replays of one message id")
	assert.Equal(t, map[int64][2]bool{tw.origin: {true, false}}, ledgerRows(t, b, tw.r1.ID), "the first replay keeps its key")
	assert.Equal(t, map[int64][2]bool{tw.a: {false, false}}, ledgerRows(t, b, r2.ID), "the later one is kept, without the key")
	var indexes int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes
        WHERE tablename = 'replay_ledger' AND indexname IN ('replay_ledger_dedupe_key', 'replay_ledger_operation_key')`).Scan(&indexes))
	assert.Equal(t, 2, indexes)

	_, err = b.db.OwnerPool.Exec(ctx, m.Up)
	require.NoError(t, err)
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes
        WHERE tablename = 'replay_ledger' AND indexname IN ('replay_ledger_dedupe_key', 'replay_ledger_operation_key')`).Scan(&indexes))
	assert.Zero(t, indexes)
}
