package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// The review findings on replay after issue 12 ("fix round B"), each on
// real PostgreSQL and NATS, asserting what the target stream holds.

// deadLetterStatus reads the status of dead letter id and whether an item
// of request still holds it.
func (b *replayBundle) deadLetterStatus(t *testing.T, id, request int64) (string, bool) {
	t.Helper()
	var status string
	var held bool
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT d.status,
        EXISTS (SELECT 1 FROM replay_items i WHERE i.dead_letter_id = d.id AND i.request_id = $2 AND i.held)
        FROM dead_letters d WHERE d.id = $1`, id, request).Scan(&status, &held))
	return status, held
}

// TestHaltKeepsMaybePublishedHeld cancels (or stops in an emergency) a
// request whose job may have been published: one whose PubAck was lost
// (unknown), and one a worker published and then crashed before recording
// (claimed, its lease running out). Neither is "cancelled": each needs
// reconciliation, its dead letter stays held (no new request can take it),
// and another request of the same identity is not published while it
// waits for a person. The target stream holds each message once.
func TestHaltKeepsMaybePublishedHeld(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	halts := map[string]func(t *testing.T, id int64){
		"Cancel": func(t *testing.T, id int64) {
			require.NoError(t, b.replays.Cancel(ctx, id, oncall, "wrong target", quarantine.RequestMeta{}))
		},
		"Stop": func(t *testing.T, id int64) {
			require.NoError(t, b.replays.Stop(ctx, id, approver1, replay.StopInput{Reason: "incident", Typed: "STOP"}, quarantine.RequestMeta{}))
		},
	}
	for name, halt := range halts {
		t.Run(name+"Unknown", func(t *testing.T) {
			msgID := "halt-unknown-" + name
			id := b.seedItem(t, "analytics.event", msgID, nil, "{}")
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			w := b.worker(t, replay.WorkerConfig{Retry: time.Hour}) // no retry within the test
			loseAcks(w, 1)
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)
			require.Equal(t, "unknown", b.job(t, req.ID, id).State)
			halt(t, req.ID)
			b.checkMaybePublished(t, req.ID, id, msgID)
		})
		t.Run(name+"CrashedClaim", func(t *testing.T) {
			msgID := "halt-crashed-" + name
			id := b.seedItem(t, "analytics.event", msgID, nil, "{}")
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			dying := b.worker(t, replay.WorkerConfig{Owner: "dying-" + name, Lease: time.Second})
			dying.AfterPublish(func([]int64) bool { return false }) // published, then gone before recording
			_, err := dying.RunOnce(ctx)
			require.ErrorIs(t, err, replay.ErrStopped)
			require.Equal(t, "claimed", b.job(t, req.ID, id).State)
			halt(t, req.ID) // while its lease still runs: left to a worker, who finds it halted
			survivor := b.worker(t, replay.WorkerConfig{Owner: "survivor-" + name})
			wait.Until(t, "the crashed claim taken over and ended", 15*time.Second, func() bool {
				_, err := survivor.RunOnce(ctx)
				require.NoError(t, err)
				return !replay.JobState(b.job(t, req.ID, id).State).Running()
			})
			b.checkMaybePublished(t, req.ID, id, msgID)
		})
	}
}

// checkMaybePublished asserts that the job of dead letter id in request
// req, which may have been published as msgID, waits for a person: held,
// needs reconciliation, not draftable again, and that another dead letter
// of the same message id is not published meanwhile.
func (b *replayBundle) checkMaybePublished(t *testing.T, req, id int64, msgID string) {
	t.Helper()
	ctx := context.Background()
	j := b.job(t, req, id)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "may have landed")
	status, held := b.deadLetterStatus(t, id, req)
	assert.Equal(t, "needs_reconciliation", status)
	assert.True(t, held, "the dead letter stays held until a person decides")
	_, drafts := b.draft(t, oncall, id)
	items, err := b.replays.Items(ctx, drafts[0].ID, 10)
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.NotEmpty(t, items[0].SkipReason, "a new request cannot take it")
	assert.Equal(t, 1, b.publishedAs(t, msgID), "published once")

	// Another dead letter of the same message id (dedupe): the ledger
	// counts the one waiting for a person as possibly replayed.
	twin := b.seedItem(t, "analytics.event", msgID, nil, "{}")
	other := b.request(t, []int64{twin}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{})
	wait.Until(t, "the twin judged", 15*time.Second, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return !replay.JobState(b.job(t, other.ID, twin).State).Running()
	})
	tj := b.job(t, other.ID, twin)
	assert.Equal(t, "blocked", tj.State, tj.Result)
	assert.Contains(t, tj.Result, "waits for reconciliation")
	assert.Equal(t, 1, b.publishedAs(t, msgID), "the twin was not published")
}

// publishedAs counts the messages of the target stream published under
// message id msgID.
func (b *replayBundle) publishedAs(t *testing.T, msgID string) int {
	t.Helper()
	n := 0
	for _, m := range streamMsgs(t, b.target) {
		if m.Header.Get(dlq.HeaderNatsMsgID) == msgID {
			n++
		}
	}
	return n
}

// TestRecordGuardsOnHeldItem records the outcome of a job whose request
// no longer holds its dead letter (another request took it meanwhile):
// the job ends as the rules said, but the dead letter stays as the request
// holding it left it, and that request replays it once.
func TestRecordGuardsOnHeldItem(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "guarded", nil, "{}")
	first := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{})
	jobs, err := w.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)

	// Meanwhile the first request let go of the dead letter (as a person
	// settling it would) and a second one took it.
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_items SET held = false WHERE request_id = $1`, first.ID)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE dead_letters SET status = 'quarantined' WHERE id = $1`, id)
	require.NoError(t, err)
	second := b.request(t, []int64{id}, replay.SubmitInput{})

	w.Judge(ctx, jobs) // on what the claim read: it still held the dead letter then
	w.Publish(ctx, jobs, time.Now().Add(time.Minute))
	require.NoError(t, w.Record(ctx, jobs))
	assert.Equal(t, 0, b.publishedAs(t, "guarded"), "the gate saw the dead letter is no longer the request's")
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = CASE WHEN request_id = $1 THEN now() ELSE now() + interval '1 hour' END`, first.ID)
	require.NoError(t, err)
	jobs, err = w.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	w.Judge(ctx, jobs)
	w.Publish(ctx, jobs, time.Now().Add(time.Minute))
	require.NoError(t, w.Record(ctx, jobs))
	assert.Equal(t, "blocked", b.job(t, first.ID, id).State)
	status, held := b.deadLetterStatus(t, id, second.ID)
	assert.Equal(t, "replay_requested", status, "the first request's late record leaves the second's dead letter alone")
	assert.True(t, held)

	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, second.ID)
	require.NoError(t, err)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, second.ID, replay.StatusDone)
	assert.Equal(t, 1, b.publishedAs(t, "guarded"))
	status, _ = b.deadLetterStatus(t, id, second.ID)
	assert.Equal(t, "replayed", status)
}
