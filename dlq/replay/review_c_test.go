package replay_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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

// failedLongAgo are the headers of a dead letter whose original failed an
// hour ago: its duplicate window has long passed, so a first attempt
// publishes at once.
func failedLongAgo() nats.Header {
	return nats.Header{dlq.HeaderFirstFailedAt: {time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}
}

// TestEmergencyStopEndsDraftsAndProblems stops a tenant in an emergency
// while a draft waits to be submitted and a request done with problems
// has an item waiting for a person: the draft is ended (a submit right
// after the stop runs nothing), and the request is stopped so that the
// item may still be settled, but never republished.
func TestEmergencyStopEndsDraftsAndProblems(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	waiting := b.seedItem(t, "search.index_update", "stop-waiting", nil, "{}")
	problems := b.request(t, []int64{waiting}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.db.Pool, problems.ID)
	batch, drafts := b.draft(t, oncall, b.seedItem(t, "search.index_update", "stop-draft", nil, "{}"))

	page, err := b.replays.Stoppable(ctx, []string{"acme"})
	require.NoError(t, err)
	assert.Len(t, page, 2, "the stop page lists both")
	n, err := b.replays.StopAll(ctx, "acme", func(replaypolicy.Class) bool { return true }, approver1,
		replay.StopInput{Reason: "incident 7", Typed: replaypolicy.StopPhrase}, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.Equal(t, 2, n.Stopped)

	_, err = b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "right after the stop"}, quarantine.RequestMeta{})
	require.Error(t, err, "a draft frozen before the stop is not submitted after it")
	d, err := b.replays.Request(ctx, drafts[0].ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusCancelled, d.Status)

	err = b.replays.Reconcile(ctx, problems.ID, waiting, approver1,
		replay.ReconcileInput{Choice: replaypolicy.Republish, Note: "not in the index"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "no republish after a stop: %v", err)
	r, err := b.replays.Request(ctx, problems.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusCancelled, r.Status)
	assert.Equal(t, map[string]int{"needs_reconciliation": 1}, b.jobStates(t, problems.ID), "nothing runs again")
	require.NoError(t, b.replays.Reconcile(ctx, problems.ID, waiting, approver1,
		replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "not in the index"}, quarantine.RequestMeta{}), "it may still be settled")
	dl, err := b.store.Get(ctx, waiting)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusQuarantined, dl.Status)
	assert.Equal(t, 1, auditCount(t, b, `action = 'replay.stop' AND object_id = $1`, fmt.Sprint(drafts[0].ID)), "the draft's end is audited")
}

// TestIdenticalEditUnlocksNothing edits a schema_invalid item with the
// bytes it was received with: refused (invalid, saying nothing was
// edited), and the item stays left out until a real edit or a fix.
func TestIdenticalEditUnlocksNothing(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	payload := []byte(`{"doc":"same"}`)
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "same-bytes", Class: "schema_invalid", Payload: payload})
	_, drafts := b.draft(t, oncall, id)
	err := b.replays.EditPayload(ctx, drafts[0].ID, id, oncall, replay.PayloadEdit{Payload: payload, Reason: "try again"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err))
	assert.Contains(t, quarantine.ErrorMessage(err), "nothing was edited")
	items, err := b.replays.Items(ctx, drafts[0].ID, 1)
	require.NoError(t, err)
	assert.Equal(t, replaypolicy.CheckNeedsFix, items[0].Check, "still left out")
	assert.False(t, items[0].Edited)

	require.NoError(t, b.replays.EditPayload(ctx, drafts[0].ID, id, oncall,
		replay.PayloadEdit{Payload: []byte(`{"doc":"same","v":2}`), Reason: "the v2 field"}, quarantine.RequestMeta{}))
	err = b.replays.EditPayload(ctx, drafts[0].ID, id, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":"same","v":2}`), Reason: "again"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "the bytes it already holds are no edit either")
}

// TestPlantedDuplicateIsNotOurs has a producer plant a message under a
// replay's message id before the replay publishes, with the replay's own
// Dlq-Replay-Of and Dlq-Replay-Request and payload: the broker answers
// Duplicate, and the kept message, stored before the job's first
// publish, is not taken for ours: never "replayed". Since round 38 it
// goes to a person rather than being deferred: it cannot be told from
// this replay's own publish whose record a PostgreSQL failover lost
// (TestRev38PublishTheDatabaseLostIsLeftForAPerson), and either way the
// subject's consumers may have applied it, so publishing again after the
// window could be a second effect.
func TestPlantedDuplicateIsNotOurs(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	payload := []byte(`{"doc":"planted"}`)
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "planted-1", Payload: payload,
		Headers: failedLongAgo()})
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	const subject = "app.acme.search.index_update"
	_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: payload, Header: nats.Header{
		dlq.HeaderReplayOf: {fmt.Sprint(id)}, dlq.HeaderReplayRequest: {fmt.Sprint(req.ID)}}}, jetstream.WithMsgID("planted-1"))
	require.NoError(t, err)
	run(t, b.worker(t, replay.WorkerConfig{}))

	var j jobRow
	wait.Until(t, "the job's first outcome", time.Minute, func() bool {
		j = b.job(t, req.ID, id)
		return j.State != string(replay.JobPending) && j.State != string(replay.JobClaimed)
	})
	assert.Equal(t, string(replay.JobNeedsReconciliation), j.State, j.Result)
	assert.Contains(t, j.Result, "or a copy")
	assert.Equal(t, 1, b.onSubject(t, subject), "only the planted message")
}

// TestOldOutcomesGoToPeople runs the review's migration on what the worker
// before 0010 left, as 0010 left it: jobs unknown or claimed with no first
// attempt time are not published blind but handed to a person once the
// window cannot cover them; jobs recorded published on a Duplicate PubAck
// (suppressed_duplicate, their dead letters green, their ledger rows
// counting as replays) wait for a person, their request done with
// problems, their ledger rows set aside, and may be replayed again. Its
// down file leaves nothing for the old worker to retry forever.
func TestOldOutcomesGoToPeople(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := b.db.OwnerPool.Exec(ctx, q, args...)
		require.NoError(t, err)
	}
	unknown := b.seedItem(t, "search.index_update", "old-unknown", failedLongAgo(), "{}")
	claimed := b.seedItem(t, "search.index_update", "old-claimed", failedLongAgo(), "{}")
	old := b.request(t, []int64{unknown, claimed}, replay.SubmitInput{})
	exec(`UPDATE replay_requests SET status = 'running', approved_at = now() - interval '1 hour' WHERE id = $1`, old.ID)
	exec(`UPDATE replay_jobs SET state = CASE WHEN dead_letter_id = $2 THEN 'unknown' ELSE 'claimed' END, first_attempt_at = NULL,
        lease_until = now() - interval '1 minute', updated_at = now() - interval '50 minutes', not_before = now() WHERE request_id = $1`, old.ID, unknown)

	dup := b.seedItem(t, "search.index_update", "old-duplicate", failedLongAgo(), "{}")
	green := b.request(t, []int64{dup}, replay.SubmitInput{})
	exec(`UPDATE replay_jobs SET state = 'suppressed_duplicate', duplicate = true, pub_stream = 'APP', pub_seq = 1 WHERE request_id = $1`, green.ID)
	exec(`INSERT INTO replay_ledger (job_id, request_id, dead_letter_id, tenant, class, msg_id, subject, stream, seq, duplicate)
        SELECT id, request_id, dead_letter_id, 'acme', 'rebuildable', 'old-duplicate', 'app.acme.search.index_update', 'APP', 1, true
        FROM replay_jobs WHERE request_id = $1`, green.ID)
	exec(`UPDATE replay_items SET held = false WHERE request_id = $1`, green.ID)
	exec(`UPDATE dead_letters SET status = 'replayed' WHERE id = $1`, dup)
	exec(`UPDATE replay_requests SET status = 'done', status_reason = 'done: 1 replayed' WHERE id = $1`, green.ID)

	m, later := reviewMigration(t)
	down := func() {
		for i := len(later) - 1; i >= 0; i-- {
			exec(later[i].Down)
		}
		exec(m.Down)
	}
	up := func() {
		exec(m.Up)
		for _, l := range later {
			exec(l.Up)
		}
	}
	down() // the database as 0010 left it, with what the old worker left
	up()

	// The false green waits for a person and may be replayed again.
	assert.Equal(t, map[string]int{"needs_reconciliation": 1}, b.jobStates(t, green.ID))
	r, err := b.replays.Request(ctx, green.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusDoneWithProblems, r.Status)
	d, err := b.store.Get(ctx, dup)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusNeedsReconciliation, d.Status)
	var ledger, aside int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM replay_ledger WHERE dead_letter_id = $1),
        (SELECT count(*) FROM replay_ledger_set_aside WHERE dead_letter_id = $1)`, dup).Scan(&ledger, &aside))
	assert.Equal(t, []int{0, 1}, []int{ledger, aside}, "the ledger no longer counts it as replayed; the row is kept aside")
	require.NoError(t, b.replays.Reconcile(ctx, green.ID, dup, approver1,
		replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "the index has no doc old-duplicate"}, quarantine.RequestMeta{}))
	_, drafts := b.draft(t, oncall, dup)
	items, err := b.replays.Items(ctx, drafts[0].ID, 1)
	require.NoError(t, err)
	assert.Equal(t, replay.VerdictGo, items[0].Verdict, "replayable again: %s", items[0].SkipReason)

	// The old unknown and claimed jobs are not published blind: the window
	// cannot cover a publish made as early as their approval.
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	w := b.worker(t, replay.WorkerConfig{})
	wg.Go(func() { w.Run(wctx) })
	wait.Until(t, "the old jobs handed to a person", time.Minute, func() bool {
		return b.jobStates(t, old.ID)["needs_reconciliation"] == 2
	})
	stop()
	wg.Wait()
	assert.Zero(t, b.onSubject(t, "app.acme.search.index_update"), "nothing published again")

	// Down: the old worker would retry needs_reconciliation as unknown
	// forever; it finds them blocked, saying a person must decide.
	down()
	assert.Equal(t, map[string]int{"blocked": 2}, b.jobStates(t, old.ID))
	assert.Contains(t, b.job(t, old.ID, unknown).Result, "a person must check the target and decide")
	d, err = b.store.Get(ctx, unknown)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusReplayFailed, d.Status)
	up()
}

// reviewMigration is the migration of review round C, found by name (its
// number moves as others land), and the ones after it.
func reviewMigration(t *testing.T) (migrations.Migration, []migrations.Migration) {
	t.Helper()
	all, err := migrations.All()
	require.NoError(t, err)
	for i, m := range all {
		if m.Name == "replay_review_c" {
			return m, all[i+1:]
		}
	}
	t.Fatal("no migration replay_review_c")
	return migrations.Migration{}, nil
}

func auditCount(t *testing.T, b *replayBundle, where string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_log WHERE "+where, args...).Scan(&n))
	return n
}
