package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestStoredAtOutsidePartitionsKept: JetStream's stored time is the NATS
// server's clock. A clock before 2000 (a machine that lost its clock) or
// more than a year ahead made a dead letter no partition can hold: refused
// in its parsed and its raw form, and redelivered every 30 s for good. It is
// now stored under the UTC day it arrived, flagged, and a redelivery the
// same day finds its row.
func TestStoredAtOutsidePartitionsKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := NewStore(testdb.New(t).Pool)
	today := Day(time.Now())
	for i, at := range []time.Time{
		time.Unix(0, 0).UTC(), // 1970
		time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Now().Add(500 * 24 * time.Hour), // far ahead
	} {
		seq := uint64(100 + i)
		m := Received{Subject: "dlq.acme.orders.refund", Header: map[string][]string{HeaderOriginalSubject: {"app.acme.orders.refund"}},
			Data: []byte(`{"n":1}`), Stream: "DLQ", Seq: seq, Time: at}
		r := ParseDLQ("dlq", m)
		assert.Equal(t, today, r.DeadLetteredAt, "kept under the day it arrived")
		assert.Contains(t, r.Flags, "implausible:dead_lettered_at")
		res, err := store.Insert(ctx, []Record{r})
		require.NoError(t, err)
		require.Empty(t, res.Raw, "stored in its parsed form")
		require.Empty(t, res.Unstorable)
		d, err := store.BySource(ctx, "DLQ", seq, "")
		require.NoError(t, err)
		assert.Equal(t, today, d.DeadLetteredAt.UTC())
		assert.Contains(t, d.Delivery, at.UTC().Format(time.RFC3339Nano), "the delivery still names the stored time")

		again, err := store.Insert(ctx, []Record{ParseDLQ("dlq", m)}) // a redelivery
		require.NoError(t, err)
		assert.Empty(t, again.Raw)
		var rows int
		require.NoError(t, store.pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE source_seq = $1`, seq).Scan(&rows))
		assert.Equal(t, 1, rows, "a redelivery the same day makes no second row")
	}

	// A time partitions can hold is kept as JetStream stored it.
	at := time.Now().Add(-72 * time.Hour).UTC().Truncate(time.Microsecond)
	r := ParseDLQ("dlq", Received{Subject: "dlq.acme.orders.refund", Stream: "DLQ", Seq: 200, Time: at})
	assert.Equal(t, at, r.DeadLetteredAt)
	assert.NotContains(t, r.Flags, "implausible:dead_lettered_at")
}
