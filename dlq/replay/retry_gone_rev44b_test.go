package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRev44bRetryAfterItsFirstPublishWasRemovedNeedsAPerson (review round
// 44b) loses the PubAck of a first publish the broker stored (EVENTS:1),
// and removes that message from the stream (as a person's `nats stream
// rmm` does, or a crash that loses the unsynced tail of a file store),
// after a consumer may have applied it. Without a restart the broker
// still holds its id and drops the retry; with one, it rebuilt its
// duplicate window from the messages the stream still holds, and stores
// the retry as new (EVENTS:2); so it does when the removed message lies
// between others the stream still holds (one of its deleted sequences,
// not below its first). Either way the job needs a person, never
// "replayed", and nothing is published once it does.
func TestRev44bRetryAfterItsFirstPublishWasRemovedNeedsAPerson(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart bool
		others  bool // a message of another subject stored before the first publish, and one after
		reason  string
		copies  int
	}{
		{"NoRestart", false, false, "the message it keeps (EVENTS:1) could not be read back", 0},
		{"Restart", true, false, "stream EVENTS no longer holds 1 of the messages it stored between that publish and this one (EVENTS:1 to EVENTS:1)", 1},
		{"RestartWithOthersAround", true, true, "stream EVENTS no longer holds 1 of the messages it stored between that publish and this one (EVENTS:2 to EVENTS:3)", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setupReplay(t)
			ctx := context.Background()
			o := startOwnNATS(t, b)
			_, err := o.js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: 2 * time.Minute, Storage: jetstream.FileStorage})
			require.NoError(t, err)
			first := uint64(1)
			if tc.others {
				_, err = o.js.Publish(ctx, "events.acme.other", []byte("{}"))
				require.NoError(t, err)
				first = 2
			}
			id := b.seedItem(t, "search.index_update", "rg-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, `{"n":1}`)
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			w := o.worker(b, replay.WorkerConfig{Retry: 20 * time.Millisecond, AckTimeout: time.Second})
			loseAcks(w, 1)
			_, err = w.RunOnce(ctx)
			require.NoError(t, err)
			require.Equal(t, "unknown", b.job(t, req.ID, id).State)
			if tc.others {
				_, err = o.js.Publish(ctx, "events.acme.other", []byte("{}"))
				require.NoError(t, err)
			}
			st, err := o.js.Stream(ctx, "EVENTS")
			require.NoError(t, err)
			m, err := st.GetMsg(ctx, first)
			require.NoError(t, err)
			require.Equal(t, "rg-1", m.Header.Get(dlq.HeaderNatsMsgID), "the first publish was stored")
			require.NoError(t, st.DeleteMsg(ctx, first))
			if tc.restart {
				o.stop(t)
				o.start(t)
			}

			j := runUntil(t, b, w, req.ID, id, "unknown", "pending")
			assert.Equal(t, "needs_reconciliation", j.State, j.Result)
			assert.Contains(t, j.Result, tc.reason)
			assert.Contains(t, j.Result, "Check the target")
			attempts := j.Attempts
			_, err = w.RunOnce(ctx)
			require.NoError(t, err)
			j = b.job(t, req.ID, id)
			assert.Equal(t, "needs_reconciliation", j.State, "a person's now")
			assert.Equal(t, attempts, j.Attempts, "not claimed again")
			st, err = o.js.Stream(ctx, "EVENTS")
			require.NoError(t, err)
			assert.Equal(t, tc.copies, copiesOf(t, st, "rg-1"), "nothing published once it needs a person")
		})
	}
}

// TestRev44bRetryStoredAsNewWithNothingRemovedSinceIsReplayed: the first
// publish never landed (the stream was full and refused it; the answer was
// lost), a person made room by deleting a message stored before it, and
// the broker restarted. The retry is stored as new, and the stream holds
// every message stored since the first publish was sent: that publish
// took no sequence there, and the job is replayed, stored once.
func TestRev44bRetryStoredAsNewWithNothingRemovedSinceIsReplayed(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	o := startOwnNATS(t, b)
	st, err := o.js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: 2 * time.Minute, Storage: jetstream.FileStorage,
		MaxMsgs: 1, Discard: jetstream.DiscardNew})
	require.NoError(t, err)
	_, err = o.js.Publish(ctx, "events.acme.other", []byte("{}"))
	require.NoError(t, err)
	id := b.seedItem(t, "search.index_update", "rn-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := o.worker(b, replay.WorkerConfig{Retry: 20 * time.Millisecond, AckTimeout: time.Second})
	lost := loseAcks(w, 1) // the broker's refusal (the stream is full) is lost
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, int32(1), lost.Load())
	require.Equal(t, "unknown", b.job(t, req.ID, id).State)
	require.Equal(t, 0, copiesOf(t, st, "rn-1"), "the first publish was not stored")
	require.NoError(t, st.DeleteMsg(ctx, 1)) // room for it, made before it was sent
	o.stop(t)
	o.start(t)

	j := runUntil(t, b, w, req.ID, id, "unknown", "pending")
	assert.Equal(t, "replayed", j.State, j.Result)
	assert.Contains(t, j.Result, "stored as EVENTS:2")
	st, err = o.js.Stream(ctx, "EVENTS")
	require.NoError(t, err)
	assert.Equal(t, 1, copiesOf(t, st, "rn-1"))
}
