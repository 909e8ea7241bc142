package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRevIngest22AheadClockRedeliveryJudgedPlausibleStoredAgain (review
// 22b): the sibling round 18b's fix did not cover. checkStoredAt judges a
// stored time against now: a NATS server whose clock ran more than
// maxStoredAhead (399 days) ahead stored a dead letter at t; the day it
// arrived it was implausible and kept under that day's midnight, flagged
// implausible:dead_lettered_at. Time moves on and the same t is no longer
// more than 399 days ahead: a later delivery of the same stream message
// (an ack lost, a batch handed back, the ingest consumer made again from
// the stream's first message; a stream message stamped in the future is
// never aged out) is judged plausible and kept under t itself. The unique
// index is (dead_lettered_at, source_key), and only a record that is
// itself flagged implausible looks its key up under other days
// (keptUnderADay): the redelivery makes a second row of one stream
// message (invariant 2).
//
// The first delivery is simulated as checkStoredAt made it yesterday, the
// way TestRevIngest18bResetClockRedeliveryOnALaterDayStoredAgain does.
func TestRevIngest22AheadClockRedeliveryJudgedPlausibleStoredAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := NewStore(testdb.New(t).Pool)
	now := time.Now()
	// Stamped 399 days ahead less an hour: more than maxStoredAhead
	// ahead of yesterday, within it today.
	stamped := now.Add(maxStoredAhead - time.Hour).UTC().Truncate(time.Microsecond)
	m := Received{Subject: "dlq.acme.orders.refund", Header: map[string][]string{HeaderOriginalSubject: {"app.acme.orders.refund"}},
		Data: []byte(`{"n":1}`), Stream: "DLQ", Seq: 610, Time: stamped}

	first := ParseDLQ("dlq", m)
	first.checkStoredAt(now.Add(-24 * time.Hour)) // as it was judged when it arrived yesterday
	require.Contains(t, first.Flags, FlagImplausibleStoredAt, "yesterday the stamp was more than %s ahead", maxStoredAhead)
	res, err := store.Insert(ctx, []Record{first})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 1)

	again := ParseDLQ("dlq", m) // the same stream message delivered again today
	require.Equal(t, first.SourceKey, again.SourceKey, "the same message, the same key")
	require.NotContains(t, again.Flags, FlagImplausibleStoredAt, "today the same stamp is within %s", maxStoredAhead)
	res, err = store.Insert(ctx, []Record{again})
	require.NoError(t, err)
	var rows int
	require.NoError(t, store.pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE source_key = $1`, first.SourceKey[:]).Scan(&rows))
	assert.Equal(t, 1, rows, "one stream message, %d rows (%d inserted by the redelivery)", rows, len(res.Inserted))
}
