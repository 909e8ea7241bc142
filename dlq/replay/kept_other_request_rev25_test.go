package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevReplay25KeptForAnotherRequestIsNotOurs: the message the broker
// keeps under a replay's message id, when it answers a retry Duplicate,
// is this replay's own earlier publish only when its Dlq-Replay-Of names
// this job's dead letter AND its Dlq-Replay-Request names this request
// (Worker.kept's Kept.Tagged; OursKept). A dead letter was requested
// before by another request, cancelled; it is requested again, and the
// worker dies between the publish gate and the send (first attempt marked,
// nothing sent, nothing recorded). Before the retry, a message of the
// dead letter with the approved payload, on its subject, stored after this
// job's first attempt, lands under its message id carrying Dlq-Replay-Of
// of the dead letter and Dlq-Replay-Request of the cancelled request (its
// late publish, or a producer that copied the headers): nothing but the
// request header tells it from ours. The retry is answered Duplicate, and
// the job is not replayed: it goes to a person, since the cancelled
// request's late publish may have been applied (review round 39: it was
// deferred, and published again once the window had passed); the same
// message naming this request is taken as ours (replayed). Every test kept passing with the request
// half of the tag dropped, which records another request's publish as
// this request's replay.
func TestRevReplay25KeptForAnotherRequestIsNotOurs(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	payload := []byte(`{"doc":"rr25"}`)
	for _, tc := range []struct {
		name         string
		otherRequest bool // the kept message names the cancelled request, not this one
		state, says  string
		duplicate    bool
	}{
		{"AnotherRequest", true, string(replay.JobNeedsReconciliation), "is an earlier replay of this dead letter", false},
		{"ThisRequest", false, string(replay.JobReplayed), "is this replay's own earlier publish", true},
	} {
		msgID := "rr25-kept-" + tc.name
		id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID, Payload: payload,
			Headers: failedLongAgo()})
		cancelled := b.request(t, []int64{id}, replay.SubmitInput{})
		require.NoError(t, b.replays.Cancel(ctx, cancelled.ID, oncall, "wrong day", quarantine.RequestMeta{}), tc.name)
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replay.StatusApproved, req.Status, "%s: %s", tc.name, req.StatusReason)
		require.NotEqual(t, cancelled.ID, req.ID)

		before := b.onSubject(t, subject) // the cases before this one
		// The worker dies after the gate marked the first attempt, before
		// the send and before any record.
		wctx, stop := context.WithCancel(ctx)
		dying := b.worker(t, replay.WorkerConfig{Owner: "dying-" + tc.name, Lease: time.Minute})
		dying.BeforeSend(func(int64, time.Time) { stop() })
		dying.AfterPublish(func([]int64) bool { return false })
		_, err := dying.RunOnce(wctx)
		stop()
		require.ErrorIs(t, err, replay.ErrStopped, tc.name)
		first := b.job(t, req.ID, id)
		require.Equal(t, string(replay.JobClaimed), first.State, "%s: nothing recorded: %s", tc.name, first.Result)
		require.NotNil(t, first.FirstAttemptAt, "%s: the gate marked the first attempt", tc.name)
		require.Equal(t, before, b.onSubject(t, subject), "%s: nothing was sent", tc.name)
		_, handed := b.handedAt(t, req.ID, id)
		require.NotNil(t, handed, "%s: handed to NATS as far as the database knows", tc.name)

		// Tagged with the dead letter, the approved payload, the subject,
		// stored after the first attempt: only the request header differs.
		names := req.ID
		if tc.otherRequest {
			names = cancelled.ID
		}
		ack, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: payload, Header: nats.Header{
			replay.HeaderReplayOf: {fmt.Sprint(id)}, replay.HeaderReplayRequest: {fmt.Sprint(names)}}}, jetstream.WithMsgID(msgID))
		require.NoError(t, err)
		require.False(t, ack.Duplicate, tc.name)
		kept, err := b.target.GetMsg(ctx, ack.Sequence)
		require.NoError(t, err)
		require.False(t, kept.Time.Before(*first.FirstAttemptAt), "%s: stored at %s, after the first attempt (%s)", tc.name, kept.Time, *first.FirstAttemptAt)

		b.leaseRunsOut(t, req.ID)
		w := b.worker(t, replay.WorkerConfig{Owner: "retry-" + tc.name, Retry: 20 * time.Millisecond})
		var j jobRow
		wait.Until(t, tc.name+": the retry's outcome", time.Minute, func() bool {
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)
			j = b.job(t, req.ID, id)
			return j.State != string(replay.JobPending) && j.State != string(replay.JobClaimed) && j.State != string(replay.JobUnknown)
		})
		assert.Equal(t, tc.state, j.State, "%s: the kept message names request %d, this is %d: %s", tc.name, names, req.ID, j.Result)
		assert.Contains(t, j.Result, tc.says, tc.name)
		assert.Equal(t, tc.duplicate, j.Duplicate, tc.name)
		assert.Equal(t, before+1, b.onSubject(t, subject), "%s: only the kept message; nothing of the replay was stored", tc.name)
	}
}
