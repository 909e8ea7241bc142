package replay_test

import (
	"context"
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

// TestRevReplay32MessageSentAgainIsNotPublishedAgain: a replay's first
// publish waits for the original's duplicate window, so a Duplicate answer
// to it was taken for "something else under the id" and deferred until
// that message's window had passed, then published. But the message the
// broker keeps may be the message itself (its subject and payload),
// published again after it was dead-lettered: its producer's outbox
// retried, someone sent it by hand. Its consumers may have applied it,
// and the deferred replay then published it a third time. Such a message
// now ends the job needing reconciliation (sent-again), nothing published,
// the attempt recorded as not landed (no handed_at: it is no replay of the
// dead letter's) and a person can settle it;
// a message with other bytes is still waited out (deferred), and so is the
// original itself, stored before its dead letter (or within the window
// margin after it, by another stream leader's clock) and held by the window.
// A replay (it carries a Dlq-Replay-Of) stored after the dead letter was
// deferred too, the console's replays of a message being the ledger's to
// answer for; since review round 40 it needs reconciliation as well: the
// ledger holds no replay a person settled "not applied", nor one of
// another tenant's (TestRev40SiblingOfASettledReplayIsNotPublishedAgain).
func TestRevReplay32MessageSentAgainIsNotPublishedAgain(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	payload := []byte(`{"doc":"rr32"}`)
	for _, tc := range []struct {
		name      string
		kept      []byte // what the broker keeps under the message id
		keptFirst bool   // published before the dead letter was stored by the test's clock (the original itself)
		replayOf  string // the kept message's Dlq-Replay-Of
		state     replay.JobState
		says      string
	}{
		{"SentAgain", payload, false, "", replay.JobNeedsReconciliation, "published again after it was dead-lettered"},
		{"OtherBytes", []byte(`{"doc":"other"}`), false, "", replay.JobDeferred, "that is not this replay's"},
		{"TheOriginalItself", payload, true, "", replay.JobDeferred, "that is not this replay's"},
		{"TheOriginalWithinTheMargin", payload, true, "", replay.JobDeferred, "that is not this replay's"},
		{"AReplay", payload, false, "999999", replay.JobNeedsReconciliation, "is a replay of dead letter 999999, another dead letter of this message"},
	} {
		msgID := "rr32-" + tc.name
		publishKept := func() time.Time {
			m := &nats.Msg{Subject: subject, Data: tc.kept, Header: nats.Header{}}
			if tc.replayOf != "" {
				m.Header.Set(replay.HeaderReplayOf, tc.replayOf)
			}
			ack, err := b.js.PublishMsg(ctx, m, jetstream.WithMsgID(msgID))
			require.NoError(t, err, tc.name)
			require.False(t, ack.Duplicate, tc.name)
			kept, err := b.target.GetMsg(ctx, ack.Sequence)
			require.NoError(t, err, tc.name)
			return kept.Time
		}
		// The dead letter was stored a minute ago, its consumer's first
		// failure ten before: the original's window has long passed.
		at := time.Now().Add(-time.Minute)
		var keptAt time.Time
		if tc.keptFirst {
			keptAt = publishKept()
			at = keptAt.Add(time.Second)
			if tc.name == "TheOriginalWithinTheMargin" { // the broker's clock ahead of the DLQ's
				at = keptAt.Add(-50 * time.Millisecond)
			}
		}
		id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID, Payload: payload, At: at})
		if !tc.keptFirst {
			keptAt = publishKept()
		}

		req := b.request(t, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replay.StatusApproved, req.Status, "%s: %s", tc.name, req.StatusReason)
		w := b.worker(t, replay.WorkerConfig{Owner: "rr32-" + tc.name})
		var j jobRow
		wait.Until(t, tc.name+": the first publish's outcome", time.Minute, func() bool {
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)
			j = b.job(t, req.ID, id)
			return j.State != string(replay.JobPending) && j.State != string(replay.JobClaimed)
		})
		assert.Equal(t, string(tc.state), j.State, "%s: %s", tc.name, j.Result)
		assert.Contains(t, j.Result, tc.says, tc.name)
		info, err := b.target.Info(ctx, jetstream.WithSubjectFilter(subject))
		require.NoError(t, err)
		msg, err := b.target.GetLastMsgForSubject(ctx, subject)
		require.NoError(t, err)
		assert.Equal(t, msgID, msg.Header.Get(nats.MsgIdHdr), "%s: the last message on the subject is the kept one (of %d)", tc.name, info.State.Subjects[subject])
		assert.Equal(t, tc.replayOf, msg.Header.Get(replay.HeaderReplayOf), "%s: nothing of the replay was stored", tc.name)
		if tc.state != replay.JobNeedsReconciliation || tc.replayOf != "" {
			continue
		}
		_, handed := b.handedAt(t, req.ID, id)
		assert.Nil(t, handed, "%s: the attempt was dropped for the kept message: nothing of it landed", tc.name)
		require.NoError(t, b.replays.Reconcile(ctx, req.ID, id, approver1,
			replay.ReconcileInput{Choice: replaypolicy.Applied, Note: "the consumer applied the resend"}, quarantine.RequestMeta{}), tc.name)
		assert.Equal(t, replay.OutcomeApplied, replay.ShownOutcome(replay.JobState(b.job(t, req.ID, id).State), b.job(t, req.ID, id).Result), tc.name)
	}
}
