package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestRevIngest7StoredTimeAtClockResetPurgedOnArrival: severity medium.
//
// A dead letter's age, for retention, is JetStream's stored time: the NATS
// server's clock. checkStoredAt only distrusts a time before 2000-01-01
// (MinPlausibleTime, inclusive) or a year ahead. A server whose clock was
// reset (2000-01-01 00:00:00 is the reset value of the usual RTC chips, and
// of many boards without one) stores new dead letters at 2000-01-01
// 00:00:xx: taken at face value, a partition is made for that day, the row
// is stored quarantined, and the next keeper pass removes it as 26 years
// past its 90 days, minutes after it arrived, before any operator saw it;
// its source key is kept, so a redelivery is dropped too. The same holds for
// a server clock behind by more than the retention period (here 100 days).
// Nothing received is lost: a dead letter must be seen before retention
// judges it. Expected: a dead letter that arrived a moment ago (by the
// database's clock) and is still quarantined survives the keeper pass
// (e.g. a stored time older than the longest retention is flagged
// implausible and kept under the day it arrived, as checkStoredAt does for
// 1970, or retention judges by when the console stored the row).
func TestRevIngest7StoredTimeAtClockResetPurgedOnArrival(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	st := dlq.NewStore(r.db.Pool)
	cases := []struct {
		seq uint64
		at  time.Time
		why string
	}{
		{1, time.Date(2000, 1, 1, 0, 0, 5, 0, time.UTC), "NATS server clock at its RTC reset value"},
		{2, time.Now().Add(-100 * 24 * time.Hour).UTC(), "NATS server clock 100 days behind"},
	}
	var ids []int64
	for _, c := range cases {
		rec := dlqMessage("DLQ", c.seq, "orders.refund", "refund-clock", c.at)
		t.Logf("%s: stored at %s, flags %v", c.why, rec.DeadLetteredAt.Format(time.RFC3339), rec.Flags)
		res, err := st.Insert(ctx, []dlq.Record{rec})
		require.NoError(t, err)
		require.Len(t, res.Inserted, 1)
		d, err := st.BySource(ctx, "DLQ", c.seq, "")
		require.NoError(t, err)
		require.Equal(t, dlq.StatusQuarantined, d.Status)
		ids = append(ids, d.ID)
	}
	_, err := dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)

	pass := r.pass(t) // the keeper's next pass, seconds after they arrived
	t.Logf("keeper pass: %d runs", len(pass.Runs))
	for i, c := range cases {
		assert.Contains(t, r.remaining(t, ids[i:i+1]), ids[i],
			"%s: a quarantined dead letter that arrived a moment ago, never seen by anyone, is removed by retention", c.why)
	}
	// A redelivery of their messages does not bring them back: their
	// source keys were kept as those of purged dead letters.
	for _, c := range cases {
		res, err := st.Insert(ctx, []dlq.Record{dlqMessage("DLQ", c.seq, "orders.refund", "refund-clock", c.at)})
		require.NoError(t, err)
		t.Logf("%s: a redelivery stored %d rows", c.why, len(res.Inserted))
	}
}
