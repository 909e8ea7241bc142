package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevFixes7fUnsentFirstJobMakesReturnedReplaySkippedAsDone: severity
// high (an event lost, its request green). fix-replay7b's chain exception
// leaves out only the FIRST replay of each origin (ledger.go
// firstReplayJob): the origin's job with the earliest first_published_at.
// But first_published_at is set by the publish gate when it RESERVES a
// slot (gateJobs), before the approval is checked once more and before
// anything is sent, and it is never reset, also when the worker then
// releases the job unsent. Path: dedupe event A is requested (R1); the
// gate reserves its job J1 (first_published_at set) and the approval
// expires before its slot: J1 is released unsent, R1 ends with nothing
// published, and there is no ledger row of J1. A is requested again (R2):
// J2 publishes it, the broker stores it (ledger row of J2). The consumer
// fails on that replay: it comes back as B (Dlq-Replay-Of: A, linked).
// B's chain exception now picks J1 (earliest first_published_at), which
// has no ledger row, so J2, the very replay B came back from, counts
// against B: B is skipped "already replayed successfully by request R2",
// its request is void ("nothing to replay"), and the event is never
// applied. The same reserved-unsent first job is left by a Stop or a
// claim running out while a batch waits for its rate slots. Expected: the
// first replay of an origin is the first one the broker stored (its
// earliest ledger row, or the earliest job that may have been sent:
// first_attempt_at not cleared / a recorded publish), not the first one
// a gate reserved; B is drafted and replayed (2 messages on the subject).
func TestRevFixes7fUnsentFirstJobMakesReturnedReplaySkippedAsDone(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	table, err := replaypolicy.Parse("expiry.toml", []byte(`
[[rule]]
item_type = "analytics.*"
class = "dedupe"
[class.dedupe]
approval_expiry = "1h"
`))
	require.NoError(t, err)
	b.policy.Store(table)
	const msgID, subject = "rf7f-event-1", "app.acme.analytics.event"
	letter := func(at time.Time, replayOf int64) int64 {
		l := testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, Subject: subject, CorrelationID: "corr-rf7f",
			Payload: []byte(`{"clicks":7}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}
	a := letter(time.Now().Add(-3*time.Hour), 0)

	// R1: the gate reserves J1's slot, then the approval expires before it
	// is sent: released unsent.
	r1 := b.request(t, []int64{a}, replay.SubmitInput{Reason: "consumer fixed"})
	require.Equal(t, replay.StatusApproved, r1.Status)
	w1 := b.worker(t, replay.WorkerConfig{Batch: 1, Retry: time.Millisecond})
	w1.BeforeSend(func(int64, time.Time) {
		later := time.Now().Add(2 * time.Hour)
		b.now.Store(&later)
	})
	_, err = w1.RunOnce(ctx)
	require.NoError(t, err)
	// The next claim, past the expiry, blocks it: R1 ends, nothing sent.
	wait.Until(t, "R1 to end past its approval", time.Minute, func() bool {
		_, err := w1.RunOnce(ctx)
		require.NoError(t, err)
		r, err := b.replays.Request(ctx, r1.ID)
		require.NoError(t, err)
		return r.Status == replay.StatusDone || r.Status == replay.StatusDoneWithProblems
	})
	real := time.Now()
	b.now.Store(&real)
	require.Equal(t, 0, b.onSubject(t, subject), "nothing of R1 was sent")
	var firstPub *time.Time
	var firstAttempt *time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT first_published_at, first_attempt_at FROM replay_jobs WHERE request_id = $1`, r1.ID).Scan(&firstPub, &firstAttempt))
	assert.Nil(t, firstPub, "the gate reserved J1, and its record undid the reservation it never sent (review round 40)")
	t.Logf("J1 after release: first_published_at %v, first_attempt_at %v, %s", firstPub, firstAttempt, b.jobsText(t, r1.ID))

	// R2: A is replayed, the broker stores it.
	r2 := b.request(t, []int64{a}, replay.SubmitInput{Reason: "consumer fixed, again"})
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, r2.ID, replay.StatusDone)
	require.Equal(t, 1, b.onSubject(t, subject))

	// The consumer failed on R2's replay: it comes back as B, linked to A.
	back := letter(time.Now(), a)
	d, err := b.store.Get(ctx, back)
	require.NoError(t, err)
	require.NotNil(t, d.ReplayOf, "linked: %v", d.Flags)

	check, reason := draftVerdict(t, b, back)
	assert.NotEqual(t, replaypolicy.CheckLedger, check,
		"dead letter %d came back from request %d's replay of %d, the only one sent, yet that replay counts against it (reason %q)", back, r2.ID, a, reason)
	r3 := b.request(t, []int64{back}, replay.SubmitInput{Reason: "consumer fixed, third"})
	t.Logf("B's request %d: %s %s (%s)", r3.ID, r3.Status, r3.StatusReason, b.jobsText(t, r3.ID))
	// The broker's duplicate window may still hold R2's publish when B goes
	// out, so what is checked is that B's request publishes it (it is not
	// voided as already replayed), not the count on the subject.
	assert.NotEqual(t, replay.StatusVoid, r3.Status,
		"the event B stands for is never replayed: its request is void, skipped as done on the replay it came back from")
	if r3.Status == replay.StatusApproved {
		r := b.waitFinished(t, r3.ID)
		assert.Equal(t, replay.StatusDone, r.Status, "jobs: %s", b.jobsText(t, r3.ID))
	}
}
