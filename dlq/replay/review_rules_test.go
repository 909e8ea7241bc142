package replay_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestOneRequestRepeatsNoIdentity: two dead letters of one identity (the
// consumer's own dead letter and the MAX_DELIVERIES capture of the same
// message; or an email retried under a new message id with its operation
// id) in ONE request are published once: the ledger skips the second as it
// skips one of another request.
func TestOneRequestRepeatsNoIdentity(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	run(t, b.worker(t, replay.WorkerConfig{Retry: 100 * time.Millisecond}))

	t.Run("same operation id", func(t *testing.T) {
		ids := testfactory.DeadLetters(t, b.db.Pool,
			testfactory.Letter{ItemType: "email.send", MsgID: "mail-1", OperationID: "op-mail", Payload: []byte(`{"to":"x@example.com"}`)},
			testfactory.Letter{ItemType: "email.send", MsgID: "mail-2", OperationID: "op-mail", Payload: []byte(`{"to":"x@example.com"}`)})
		req := b.request(t, ids, replay.SubmitInput{})
		_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
		b.waitFinished(t, req.ID)
		assert.Equal(t, 1, b.onSubject(t, "app.acme.email.send"), "operation op-mail is sent once")
		assert.Equal(t, map[string]int{"replayed": 1, "skipped": 1}, b.jobStates(t, req.ID))
	})

	t.Run("same message id", func(t *testing.T) {
		// A short duplicate window: the broker has forgotten the id by the
		// time the second job is tried again.
		events := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: 100 * time.Millisecond})
		hdr := nats.Header{dlq.HeaderOriginalSubject: {"events.acme.analytics.page_view"}}
		x := b.seedItem(t, "analytics.event", "evt-twice", hdr, `{"n":1}`)
		y := b.seedItem(t, "analytics.event", "evt-twice", hdr, `{"n":1}`)
		req := b.request(t, []int64{x, y}, replay.SubmitInput{})
		b.waitFinished(t, req.ID)
		info, err := events.Info(ctx, jetstream.WithSubjectFilter("events.acme.analytics.page_view"))
		require.NoError(t, err)
		assert.Equal(t, uint64(1), info.State.Subjects["events.acme.analytics.page_view"], "evt-twice is published once")
		assert.Equal(t, map[string]int{"replayed": 1, "skipped": 1}, b.jobStates(t, req.ID))
	})
}

// TestNoStreamNoBlindRepublish: a target subject no stream stores, with a
// plain subscriber that never answers (a service on core NATS): the first
// publish reaches it and no PubAck comes. No duplicate window can drop a
// second publish there, so the job is not published again: it waits for
// a person (needs_reconciliation), and the subscriber got it once.
func TestNoStreamNoBlindRepublish(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	var got atomic.Int64
	sub, err := b.nc.Subscribe("events.acme.>", func(*nats.Msg) { got.Add(1) }) // no reply: no PubAck
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, b.nc.Flush())

	id := b.seedItem(t, "search.index_update", "core-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	run(t, b.worker(t, replay.WorkerConfig{AckTimeout: 200 * time.Millisecond, Retry: 50 * time.Millisecond}))

	done := b.waitStatus(t, req.ID, replay.StatusDoneWithProblems)
	assert.Contains(t, done.StatusReason, "needs reconciliation")
	j := b.job(t, req.ID, id)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Equal(t, int64(1), got.Load(), "published once: nothing drops a second publish on a subject no stream stores")
}

// TestInFlightIdentityWaits: while a job's publish got no answer (it may
// have landed, and is retried under its message id), another job of the
// same operation id, with another message id, is not published: it waits
// until the first one is settled, and then the ledger skips it.
func TestInFlightIdentityWaits(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	ids := testfactory.DeadLetters(t, b.db.Pool,
		testfactory.Letter{ItemType: "email.send", MsgID: "send-1", OperationID: "op-inflight", Payload: []byte(`{"to":"y@example.com"}`)},
		testfactory.Letter{ItemType: "email.send", MsgID: "send-2", OperationID: "op-inflight", Payload: []byte(`{"to":"y@example.com"}`)})
	req := b.request(t, ids, replay.SubmitInput{})
	_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	w := b.worker(t, replay.WorkerConfig{Retry: 100 * time.Millisecond})
	lost := loseAcks(w, 3) // the first publish and two retries of it: stored, no answer
	run(t, w)

	b.waitFinished(t, req.ID)
	assert.Equal(t, int32(3), lost.Load())
	assert.Equal(t, 1, b.onSubject(t, "app.acme.email.send"), "operation op-inflight is sent once")
	assert.Equal(t, map[string]int{"replayed": 1, "skipped": 1}, b.jobStates(t, req.ID))
}

// TestIdentityGuardedAtGate: worker A claims and judges a job of one
// operation id (nothing of the identity is replayed or in flight yet);
// before it publishes, worker B replays another request's job of the same
// operation id, under another message id, to the end. A's publish gate
// finds the identity replayed and lets nothing go: the operation is sent
// once, and A's job ends skipped.
func TestIdentityGuardedAtGate(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	approve := func(id int64) replay.Request {
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
		return req
	}
	ids := testfactory.DeadLetters(t, b.db.Pool,
		testfactory.Letter{ItemType: "email.send", MsgID: "gate-1", OperationID: "op-gate", Payload: []byte(`{"to":"z@example.com"}`)},
		testfactory.Letter{ItemType: "email.send", MsgID: "gate-2", OperationID: "op-gate", Payload: []byte(`{"to":"z@example.com"}`)})
	r1 := approve(ids[0])
	a := b.worker(t, replay.WorkerConfig{Owner: "a", Retry: 50 * time.Millisecond})
	jobs, err := a.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	a.Judge(ctx, jobs) // nothing of op-gate is replayed or in flight yet: it may go

	r2 := approve(ids[1])
	other := b.worker(t, replay.WorkerConfig{Owner: "b"})
	n, err := other.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	b.waitStatus(t, r2.ID, replay.StatusDone)
	require.Equal(t, 1, b.onSubject(t, "app.acme.email.send"))

	a.Publish(ctx, jobs, time.Now().Add(10*time.Second))
	require.NoError(t, a.Record(ctx, jobs))
	assert.Equal(t, 1, b.onSubject(t, "app.acme.email.send"), "operation op-gate is sent once")
	run(t, a)
	b.waitFinished(t, r1.ID)
	assert.Equal(t, map[string]int{"skipped": 1}, b.jobStates(t, r1.ID))
	assert.Equal(t, 1, b.onSubject(t, "app.acme.email.send"))
}
