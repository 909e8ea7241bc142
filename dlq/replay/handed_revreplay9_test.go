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
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// notOurs publishes a message under msgID to subject that is not any
// replay's (the producer sending the original again, say) and requires
// that the broker stored it (no Duplicate: the window of the last one
// under the id has passed).
func notOurs(t *testing.T, b *replayBundle, subject, msgID string) {
	t.Helper()
	ack, err := b.js.PublishMsg(context.Background(), &nats.Msg{Subject: subject, Data: []byte(`{"clicks":8,"producer":"again"}`)},
		jetstream.WithMsgID(msgID))
	require.NoError(t, err)
	require.False(t, ack.Duplicate, "the message not ours is stored")
}

// TestRevReplay9NotOursDuplicateThenCancelledIsNoFirstReplay: severity
// medium. Event A's job J1 is handed to NATS, and the broker drops it as
// a duplicate of a message that is not this replay's (read back, untagged):
// J1 is deferred, its attempt "did not land" (first_attempt_at reset), and
// the requester cancels the request. Nothing of J1 was ever stored. A is
// requested again and J2 publishes it: the broker stores it, the only
// replay of A it ever kept. The consumer fails on it and it comes back as
// B (Dlq-Replay-Of: A). J2 is the replay B came back from, so it must not
// count against B; but firstReplayJob takes J1 for A's first replay (its
// handed_at stays set: only a claim that never handed a job clears it,
// and a cancelled job is excluded only when it was never handed), so J2
// counts and B is left out "already replayed successfully by request R2":
// the dead letter of J2's failed effect can never be replayed from the
// console, for a replay the broker threw away. firstReplayJob's own
// comment excludes "a first attempt the broker kept a message not ours
// for, deferred" when it ends blocked; ended cancelled it counts.
// Expected: a job none of whose publishes the broker stored (every answer
// said "not ours": attempt reset) is no one's first replay, whatever it
// ended as (clear handed_at when an answer says the attempt did not land
// and no earlier one may have, or exclude such jobs in firstReplayJob).
func TestRevReplay9NotOursDuplicateThenCancelledIsNoFirstReplay(t *testing.T) {
	t.Parallel()
	const msgID, subject = "rr9-notours-cancel", "app.acme.analytics.event"
	b, letter := handedBundle(t, msgID, subject)
	ctx := context.Background()
	// A window long enough for the cancel to come while J1 is deferred.
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: 5 * time.Second})
	require.NoError(t, err)
	a := letter(time.Now().Add(-3*time.Hour), 0)

	notOurs(t, b, subject, msgID)
	r1 := b.request(t, []int64{a}, replay.SubmitInput{Reason: "consumer fixed"})
	require.Equal(t, replay.StatusApproved, r1.Status)
	w1 := b.worker(t, replay.WorkerConfig{Batch: 1, Retry: time.Millisecond})
	_, err = w1.RunOnce(ctx)
	require.NoError(t, err)
	j1 := b.job(t, r1.ID, a)
	require.Equal(t, "deferred", j1.State, j1.Result)
	require.Contains(t, j1.Result, "not this replay's")
	require.Nil(t, j1.FirstAttemptAt, "J1's attempt did not land")
	reserved, handed := b.handedAt(t, r1.ID, a)
	require.NotNil(t, reserved, "J1 was handed to NATS, and the broker dropped it")
	require.Nil(t, handed, "no publish of J1 may have landed: the record cleared its mark")
	require.NoError(t, b.replays.Cancel(ctx, r1.ID, oncall, "wrong day", quarantine.RequestMeta{}))
	require.Equal(t, "cancelled", b.job(t, r1.ID, a).State)
	require.Equal(t, 1, b.onSubject(t, subject), "the broker holds only the message not ours")

	r2 := b.request(t, []int64{a}, replay.SubmitInput{Reason: "consumer fixed, again"})
	require.Equal(t, replay.StatusApproved, r2.Status)
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, r2.ID, replay.StatusDone)
	require.Equal(t, 2, b.onSubject(t, subject), "the message not ours and J2, A's only replay the broker stored")

	back := letter(time.Now(), a)
	d, err := b.store.Get(ctx, back)
	require.NoError(t, err)
	require.NotNil(t, d.ReplayOf, "linked: %v", d.Flags)

	check, reason := draftVerdict(t, b, back)
	assert.Empty(t, reason, "B came back from J2, the only replay of A the broker stored; J1 stored nothing (%s)", check)
}

// TestRevReplay9SuppressedJobIsNoFirstReplay: severity medium, the same
// root as above with nothing ambiguous about it. Event A's job J1 is
// dropped by the broker as a duplicate of a message not ours three times
// (something else keeps publishing under the id): it ends
// suppressed_duplicate, "not replayed". Nothing of J1 was ever stored. A is
// replayed again by J2 (stored), which fails downstream and comes back as
// B. firstReplayJob excludes blocked and skipped jobs, not suppressed
// ones, so it takes J1 for A's first replay, and J2 counts against B: B
// is left out as already replayed by the very replay it came back from.
// Expected: a suppressed job (the broker stored none of its publishes) is
// no one's first replay; B is drafted to go.
func TestRevReplay9SuppressedJobIsNoFirstReplay(t *testing.T) {
	t.Parallel()
	const msgID, subject = "rr9-notours-suppressed", "app.acme.analytics.event"
	b, letter := handedBundle(t, msgID, subject)
	ctx := context.Background()
	a := letter(time.Now().Add(-3*time.Hour), 0)

	r1 := b.request(t, []int64{a}, replay.SubmitInput{Reason: "consumer fixed"})
	require.Equal(t, replay.StatusApproved, r1.Status)
	w1 := b.worker(t, replay.WorkerConfig{Batch: 1, Retry: time.Millisecond})
	for i := 1; i <= 3; i++ {
		if i > 1 {
			j := b.job(t, r1.ID, a)
			require.Equal(t, "deferred", j.State, j.Result)
			wait.Until(t, "J1's deferral to end", time.Minute, func() bool { return time.Now().After(j.NotBefore.Add(50 * time.Millisecond)) })
		}
		notOurs(t, b, subject, msgID)
		_, err := w1.RunOnce(ctx)
		require.NoError(t, err)
	}
	j1 := b.job(t, r1.ID, a)
	require.Equal(t, "suppressed_duplicate", j1.State, j1.Result)
	reserved, handed := b.handedAt(t, r1.ID, a)
	require.NotNil(t, reserved, "J1 was handed to NATS three times, and the broker dropped it each time")
	require.Nil(t, handed, "no publish of J1 may have landed: the record cleared its mark")
	require.Equal(t, 3, b.onSubject(t, subject), "the broker holds only the three messages not ours")

	r2 := b.request(t, []int64{a}, replay.SubmitInput{Reason: "consumer fixed, again"})
	require.Equal(t, replay.StatusApproved, r2.Status)
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, r2.ID, replay.StatusDone)
	require.Equal(t, 4, b.onSubject(t, subject), "J2 is A's only replay the broker stored")

	back := letter(time.Now(), a)
	d, err := b.store.Get(ctx, back)
	require.NoError(t, err)
	require.NotNil(t, d.ReplayOf, "linked: %v", d.Flags)

	check, reason := draftVerdict(t, b, back)
	assert.Empty(t, reason, "B came back from J2, the only replay of A the broker stored; suppressed J1 stored nothing (%s)", check)
}
