package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev41TwoTenantsGatesOfOneMessageTakeOneLock: two tenants' jobs of
// one message id on one subject (allowlists that overlap) take one
// publish gate lock: the message-on-subject question the gate reads under
// it is asked in every tenant, and with the lock the tenant's, globex's
// gate read "nothing in flight" while acme's, past its read, waited for
// its request's row; both published, the second after the target's
// window, and the broker stored the message twice. Now globex's gate
// waits for acme's, reads its publish in flight, and waits.
func TestRev41TwoTenantsGatesOfOneMessageTakeOneLock(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	overlapping(t, b, "app.{tenant}.>, events.{tenant}.>, globex=app.acme.>", "globex")
	ctx := context.Background()

	const id, subject = "rev41-x-1", "app.acme.analytics.event"
	acme := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: id, Subject: subject,
		Payload: []byte(`{"event":"viewed"}`), At: time.Now().Add(-2 * time.Hour)})
	globex := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{Tenant: "globex", ItemType: "analytics.event", MsgID: id, Subject: subject,
		Payload: []byte(`{"event":"viewed"}`), At: time.Now().Add(-2 * time.Hour)})
	first := b.request(t, []int64{acme}, replay.SubmitInput{})
	second := b.request(t, []int64{globex}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, first.Status, first.StatusReason)
	require.Equal(t, replay.StatusApproved, second.Status, second.StatusReason)

	wA := b.worker(t, replay.WorkerConfig{Batch: 1})
	wB := b.worker(t, replay.WorkerConfig{Batch: 1})
	jobsA, err := wA.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobsA, 1)
	jobsB, err := wB.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobsB, 1)
	if jobsA[0].RequestID() != first.ID {
		jobsA, jobsB = jobsB, jobsA
	}
	require.Equal(t, first.ID, jobsA[0].RequestID())
	require.Equal(t, second.ID, jobsB[0].RequestID())
	wA.Judge(ctx, jobsA)
	wB.Judge(ctx, jobsB)

	// acme's request row is held (another gate or record of the request).
	hold, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer hold.Rollback(ctx) //nolint:errcheck // committed below
	_, err = hold.Exec(ctx, `UPDATE replay_requests SET rate_next = greatest(rate_next, clock_timestamp()) WHERE id = $1`, first.ID)
	require.NoError(t, err)

	pubA := make(chan struct{})
	go func() {
		defer close(pubA)
		wA.Publish(ctx, jobsA, time.Now().Add(20*time.Second))
	}()
	b.waitLockWaiters(t, "acme's gate, past its ledger read, waits for its request's row", 1)
	pubB := make(chan struct{})
	go func() {
		defer close(pubB)
		wB.Publish(ctx, jobsB, time.Now().Add(20*time.Second))
	}()
	// globex's gate waits for acme's lock of the message's identity; with
	// a lock of its own it read nothing in flight and published at once.
	b.waitLockWaitersOr(t, "globex's gate waits for acme's, or publishes", 2, pubB)
	select {
	case <-pubB:
		t.Fatalf("globex's gate published while acme's, past its read of the message's identity, held it")
	default:
	}
	require.NoError(t, hold.Commit(ctx))
	<-pubA
	<-pubB
	require.NoError(t, wA.Record(ctx, jobsA))
	require.NoError(t, wB.Record(ctx, jobsB))

	assert.Equal(t, 1, b.onSubject(t, subject), "message id %s stored on %s once", id, subject)
	assert.Contains(t, b.jobsText(t, first.ID), "replayed")
	assert.Contains(t, b.jobsText(t, second.ID), "a replay request of another tenant")
	assert.NotContains(t, b.jobsText(t, second.ID), "replayed:")
}
