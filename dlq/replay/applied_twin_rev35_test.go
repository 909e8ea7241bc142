package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev35TwinOfAppliedItemIsNotReportedReplayed: two dead letters of one
// event (one message id on one subject) in two approved dedupe requests.
// The first one's outcome nobody could know, and a person settled it
// "applied" from what they found downstream: its dead letter is resolved,
// as no broker confirmed the replay (TestRevReplay32AppliedIsNeverCountedReplayed).
// The second's job was then skipped as "already replayed", and its dead
// letter marked replayed, though no broker stored any replay of that
// event (invariant 13). It is now skipped as already applied, as a person
// found, and its dead letter resolved too; nothing is published.
func TestRev35TwinOfAppliedItemIsNotReportedReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID, subject = "rev35-twin", "app.acme.analytics.event"
	var ids []int64
	var reqs []replay.Request
	for _, at := range []time.Time{time.Now().Add(-2 * time.Hour), time.Now().Add(-time.Hour)} {
		id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, Payload: []byte(`{"n":1}`), At: at})
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replay.StatusApproved, req.Status)
		ids, reqs = append(ids, id), append(reqs, req)
	}
	testfactory.NeedsPerson(t, b.db.Pool, reqs[0].ID)
	require.NoError(t, b.replays.Reconcile(ctx, reqs[0].ID, ids[0], approver1,
		replay.ReconcileInput{Choice: replaypolicy.Applied, Note: "the sink counted the event"}, quarantine.RequestMeta{}))

	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitFinished(t, reqs[1].ID)
	assert.Equal(t, map[string]int{string(replay.JobSkipped): 1}, b.jobStates(t, reqs[1].ID), b.jobsText(t, reqs[1].ID))
	assert.Contains(t, b.jobsText(t, reqs[1].ID), "already applied, as a person found")
	assert.Zero(t, b.onSubject(t, subject), "the twin of an applied event is not published")
	for i, id := range ids {
		var status string
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&status))
		assert.Equal(t, "resolved", status, "dead letter %d: no broker stored a replay of it", i+1)
	}
}
