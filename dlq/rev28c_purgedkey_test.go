package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevLeft28NewMessageAtAPurgedKeysSequenceIsStored: retention removed
// the dead letters of DLQ messages #1 and #2 and kept their source keys;
// the DLQ stream is then deleted and made again, so its sequences restart
// at 1. A new message #1 (stored now by a real stream made again) and a new
// message #2 stored by a NATS server whose clock was reset (2000-01-01:
// kept under the day it arrived, and so looked up by stream and sequence
// among the kept keys, keptUnderADay) are new dead letters: each is stored,
// once, quarantined, and not taken for a redelivery of the purged message
// that had its sequence. A redelivery of each is not stored twice.
func TestRevLeft28NewMessageAtAPurgedKeysSequenceIsStored(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	st := dlq.NewStore(r.db.Pool)

	old := []dlq.Record{
		dlqMessage("DLQ", 1, "orders.refund", "old-1", r.daysAgo(40)),
		dlqMessage("DLQ", 2, "orders.refund", "old-2", r.daysAgo(40).Add(time.Second)),
	}
	_, err := st.Insert(ctx, old)
	require.NoError(t, err)
	testfactory.RecordsArrived(t, r.db.Pool, old...)
	var oldIDs []int64
	for seq := uint64(1); seq <= 2; seq++ {
		d, err := st.BySource(ctx, "DLQ", seq, "")
		require.NoError(t, err)
		oldIDs = append(oldIDs, d.ID)
	}
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusDiscarded, oldIDs...)
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	require.Equal(t, int64(2), r.pass(t).Removed())
	require.Empty(t, r.remaining(t, oldIDs))
	require.Equal(t, []int64{1, 2}, purgedKeys(t, r, "DLQ"), "retention kept both keys")

	// The DLQ stream is deleted and made again: its new message #1.
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	cfg := jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}}
	_, err = js.CreateStream(ctx, cfg)
	require.NoError(t, err)
	_, err = js.Publish(ctx, "dlq.acme.orders.refund", []byte("before"))
	require.NoError(t, err)
	require.NoError(t, js.DeleteStream(ctx, "DLQ"))
	stream, err := js.CreateStream(ctx, cfg)
	require.NoError(t, err)
	ack, err := js.Publish(ctx, "dlq.acme.orders.refund", []byte(`{"msg":"new-1"}`))
	require.NoError(t, err)
	require.Equal(t, uint64(1), ack.Sequence, "the stream made again numbers from 1")
	msg, err := stream.GetMsg(ctx, 1)
	require.NoError(t, err)
	newOne := dlqMessage("DLQ", 1, "orders.refund", "new-1", msg.Time)
	// Its new message #2, stored by a NATS server whose clock was reset.
	newTwo := dlqMessage("DLQ", 2, "orders.refund", "new-2", time.Date(2000, 1, 1, 0, 0, 5, 0, time.UTC))
	require.Contains(t, newTwo.Flags, dlq.FlagImplausibleStoredAt, "kept under the day it arrived")

	for _, rec := range []dlq.Record{newOne, newTwo} {
		res, err := st.Insert(ctx, []dlq.Record{rec})
		require.NoError(t, err)
		assert.Len(t, res.Inserted, 1, "%s: a new message at a purged key's sequence is stored", rec.MsgID)
		// A redelivery of it is the same message: not stored again.
		res, err = st.Insert(ctx, []dlq.Record{rec})
		require.NoError(t, err)
		assert.Empty(t, res.Inserted, "%s: its redelivery is not stored twice", rec.MsgID)
	}
	for seq, msgID := range map[uint64]string{1: "new-1", 2: "new-2"} {
		d, err := st.BySource(ctx, "DLQ", seq, "")
		if assert.NoError(t, err, "the new dead letter #%d is stored", seq) {
			assert.Equal(t, msgID, d.MsgID)
			assert.Equal(t, dlq.StatusQuarantined, d.Status)
		}
	}
	assert.Equal(t, []int64{1, 2}, purgedKeys(t, r, "DLQ"), "the purged keys still guard the old messages")
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	assert.Empty(t, testfactory.CountersDrift(t, r.db.Pool))
}
