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
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev40SiblingOfASettledReplayIsNotPublishedAgain: two consumers gave
// up on one message, dead letters A and A2 (the same id, subject and
// payload). R0 replays A: the broker stores it, the PubAck is lost; R0 is
// cancelled and a person settles its job "not applied, leave it" (no
// ledger row). R1 replays A2 inside the window: the broker answers
// Duplicate for R0's replay of A. Round 39 left such a job for a person
// only when the kept replay was of the same dead letter; this one was
// deferred and published again once the window had passed, and the
// stream held the message twice. Now it goes to a person, and nothing
// more reaches the subject.
func TestRev40SiblingOfASettledReplayIsNotPublishedAgain(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Minute})
	require.NoError(t, err)
	a, a2 := siblings(t, b, "analytics.event", "rev40-sibling", `{"n":7}`)
	r0 := b.request(t, []int64{a}, replay.SubmitInput{})
	var subject string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT subject FROM replay_items WHERE request_id = $1`, r0.ID).Scan(&subject))

	w := b.worker(t, replay.WorkerConfig{Retry: time.Minute})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "unknown", b.job(t, r0.ID, a).State)
	require.Equal(t, 1, b.onSubject(t, subject), "the broker stored R0's publish")
	require.NoError(t, b.replays.Cancel(ctx, r0.ID, oncall, "wrong time", quarantine.RequestMeta{}))
	require.Equal(t, "needs_reconciliation", b.job(t, r0.ID, a).State)

	j := leftThenRequested(t, b, r0.ID, a, a2)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, fmt.Sprintf("a replay of dead letter %d, another dead letter of this message", a))
	assert.Equal(t, 1, b.onSubject(t, subject), "the message was not published again")
}

// TestRev40SiblingReplayTakenBeforeTheNewRequestIsNotPublishedAgain: the
// same on a work-queue target whose consumer took R0's replay of A before
// R1 replayed A2: the kept message cannot be read back, and R0's job of
// another dead letter of the message was handed to NATS within the window.
func TestRev40SiblingReplayTakenBeforeTheNewRequestIsNotPublishedAgain(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.js.DeleteStream(ctx, "APP"))
	b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Retention: jetstream.WorkQueuePolicy,
		Duplicates: time.Minute})
	cons, err := b.target.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "INDEXER", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	a, a2 := siblings(t, b, "search.index_update", "rev40-sibling-taken", `{"doc":8}`)
	r0 := b.request(t, []int64{a}, replay.SubmitInput{})

	w := b.worker(t, replay.WorkerConfig{Retry: time.Minute})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "needs_reconciliation", b.job(t, r0.ID, a).State, "a lost PubAck from a work-queue stream goes to a person")
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	require.NoError(t, err)
	taken := 0
	for m := range batch.Messages() {
		require.NoError(t, m.DoubleAck(ctx))
		taken++
	}
	require.Equal(t, 1, taken, "the indexer took R0's replay")

	j := leftThenRequested(t, b, r0.ID, a, a2)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "or one of another dead letter of the message")
	info, err := b.target.Info(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 1, info.State.LastSeq, "the stream stored the message once")
}

// siblings seeds two dead letters of one message (msgID, the same payload),
// stored a second ago: the sibling rule counts a replay of A only when it
// was stored (or, unread, handed) past A2's dead-lettering plus the
// window margin, which a replay made within 100 ms of seeding was not on
// a fast run; the job was then deferred for the window (a minute), and
// the test's wait for its judgement ran out (CI143).
func siblings(t *testing.T, b *replayBundle, itemType, msgID, payload string) (a, a2 int64) {
	t.Helper()
	seed := func() int64 {
		return testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: itemType, MsgID: msgID, CorrelationID: "corr-" + msgID,
			Payload: []byte(payload), At: time.Now().Add(-time.Second)})
	}
	return seed(), seed()
}

// unsentReservation seeds a dead letter of msgID and payload, requests it,
// and has a worker's gate reserve its first publish and its claim release
// it unsent (paused past the publishing time): the record undoes the
// reservation (job.unreserved) and finds it never handed to NATS.
func unsentReservation(t *testing.T, b *replayBundle, msgID string, payload []byte) (int64, replay.Request) {
	t.Helper()
	ctx := context.Background()
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID, Payload: payload,
		Headers: failedLongAgo()})
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{})
	w.BeforeSend(func(_ int64, until time.Time) { time.Sleep(time.Until(until) + 50*time.Millisecond) }) // paused past the publishing time
	jobs, err := w.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	w.Judge(ctx, jobs)
	w.Publish(ctx, jobs, time.Now().Add(300*time.Millisecond))
	require.NoError(t, w.Record(ctx, jobs))
	var published, handed bool
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT first_published_at IS NOT NULL, handed_at IS NOT NULL FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&published, &handed))
	require.False(t, handed, "the record found it unsent")
	require.False(t, published, "a reservation never handed to NATS is no first publish")
	require.Equal(t, 0, b.onSubject(t, "app.acme.search.index_update"), "nothing of the replay was sent")
	return id, req
}

// TestRev40PlantAfterAnUnsentReservationIsNotOurs: a gate reserved the
// job's first publish (first_published_at, never reset) and its claim
// released it unsent (the publishing time ran out). A message then
// published under the item's id with this replay's headers and approved
// payload was taken for "this replay's own earlier publish" (stored after
// the reservation) and the job shown replayed, though nothing of the
// replay was ever stored. The record now undoes a reservation its claim
// never handed to NATS: the job's first publish has no earlier one on
// record, and goes to a person.
func TestRev40PlantAfterAnUnsentReservationIsNotOurs(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	payload := []byte(`{"doc":"planted-after-gate"}`)
	id, req := unsentReservation(t, b, "rev40-plant", payload)

	_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: payload, Header: nats.Header{
		dlq.HeaderReplayOf: {fmt.Sprint(id)}, dlq.HeaderReplayRequest: {fmt.Sprint(req.ID)}}}, jetstream.WithMsgID("rev40-plant"))
	require.NoError(t, err)

	w2 := b.worker(t, replay.WorkerConfig{})
	var j jobRow
	wait.Until(t, "the job's outcome", time.Minute, func() bool {
		_, err := w2.RunOnce(ctx)
		require.NoError(t, err)
		j = b.job(t, req.ID, id)
		return j.State != "pending" && j.State != "claimed"
	})
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Equal(t, 1, b.onSubject(t, subject), "only the planted message")
}

// TestRev40PlantAfterAnUnsentReservationThenALostAckIsNotOurs: the same
// plant, and the job's first real publish answered Duplicate for it with
// the PubAck lost: its retry, answered Duplicate for the plant again, took
// it for this replay's own earlier publish (stored after the unsent
// reservation) and the job ended replayed. The record now undoes a first
// publish its claim reserved and never handed to NATS.
func TestRev40PlantAfterAnUnsentReservationThenALostAckIsNotOurs(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	payload := []byte(`{"doc":"planted-after-gate-2"}`)
	id, req := unsentReservation(t, b, "rev40-plant-lost", payload)

	_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: payload, Header: nats.Header{
		dlq.HeaderReplayOf: {fmt.Sprint(id)}, dlq.HeaderReplayRequest: {fmt.Sprint(req.ID)}}}, jetstream.WithMsgID("rev40-plant-lost"))
	require.NoError(t, err)
	w2 := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w2, 1)
	var j jobRow
	wait.Until(t, "the job's outcome", time.Minute, func() bool {
		_, err := w2.RunOnce(ctx)
		require.NoError(t, err)
		j = b.job(t, req.ID, id)
		return j.State != "pending" && j.State != "claimed" && j.State != "unknown"
	})
	assert.Equal(t, 1, b.onSubject(t, subject), "only the planted message")
	assert.NotEqual(t, "replayed", j.State, j.Result)
}

// TestRev40LaterReplayOfTheOriginIsNotTheOneItCameBackFrom: R0 replays A,
// stored, its PubAck lost; B comes back from it (linked); R0 is settled
// "not applied". Once R0's publish is out of the window, R1 replays A
// again: stored, its PubAck lost, settled "not applied" (the consumer has
// not caught up). R2 replays B inside R1's window: the broker answers
// Duplicate for R1's replay of A, B's origin. Any replay of the origin was
// taken for the one B came back from and waited out, then published
// again: three copies of the message. Only a replay stored before B was
// may be that one; R1's, stored after, goes to a person.
func TestRev40LaterReplayOfTheOriginIsNotTheOneItCameBackFrom(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID, subject = "rev40-origin-1", "app.acme.analytics.event"
	letter := func(replayOf, req int64) int64 {
		at := time.Now()
		if replayOf == 0 {
			at = at.Add(-3 * time.Hour)
		}
		l := testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, CorrelationID: "corr-" + msgID, Payload: []byte(`{"clicks":4}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)},
				dlq.UpstreamPrefix + dlq.HeaderReplayRequest: {fmt.Sprint(req)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	a := letter(0, 0)

	// R0: stored, PubAck lost, cancelled, settled not applied.
	r0 := b.request(t, []int64{a}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Retry: time.Minute})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "unknown", b.job(t, r0.ID, a).State)
	require.NoError(t, b.replays.Cancel(ctx, r0.ID, oncall, "wrong time", quarantine.RequestMeta{}))
	require.NoError(t, b.replays.Reconcile(ctx, r0.ID, a, approver1, replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "consumer failed on it"}, quarantine.RequestMeta{}))
	// B came back from R0's replay.
	back := letter(a, r0.ID)
	var of *int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT replay_of FROM dead_letters WHERE id = $1`, back).Scan(&of))
	require.NotNil(t, of, "B is linked to A")

	// A longer window, once R0's publish is out of it.
	const window = 15 * time.Second
	_, err = b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: window})
	require.NoError(t, err)
	r0Stored := b.published(t)[msgID].Time
	wait.Until(t, "R0's publish out of the longer window", time.Minute, func() bool { return time.Since(r0Stored) > window+time.Second })

	// R1: A again, stored, PubAck lost, cancelled, settled not applied.
	r1 := b.request(t, []int64{a}, replay.SubmitInput{Reason: "again"})
	w1 := b.worker(t, replay.WorkerConfig{Retry: time.Minute})
	loseAcks(w1, 1)
	_, err = w1.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "unknown", b.job(t, r1.ID, a).State, b.job(t, r1.ID, a).Result)
	require.Equal(t, 2, b.onSubject(t, subject), "R0's and R1's publishes stored")
	require.NoError(t, b.replays.Cancel(ctx, r1.ID, oncall, "wrong time", quarantine.RequestMeta{}))
	require.NoError(t, b.replays.Reconcile(ctx, r1.ID, a, approver1, replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "the target has no effect of it yet"}, quarantine.RequestMeta{}))

	// R2: B, inside R1's window.
	r2 := b.request(t, []int64{back}, replay.SubmitInput{Reason: "consumer fixed"})
	w2 := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	var j jobRow
	wait.Until(t, "B's job judged", time.Minute, func() bool {
		_, err := w2.RunOnce(ctx)
		require.NoError(t, err)
		j = b.job(t, r2.ID, back)
		return j.State != "pending" && j.State != "claimed" && j.State != "deferred" && j.State != "unknown"
	})
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, fmt.Sprintf("a replay of dead letter %d, another dead letter of this message", a))
	assert.Equal(t, 2, b.onSubject(t, subject), "B's replay was not published again after R1's stored replay of the same message")
}
