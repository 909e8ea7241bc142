package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storedUnderADay stores DLQ stream message #seq as a delivery of it is
// stored when the NATS server's clock was implausible (checkStoredAt):
// under the midnight (UTC) of the day it arrived, day, with its delivery
// and source key as JetStream stored it. Without purged: its row. With
// purged: only its key, as retention keeps it once it removed the row.
func storedUnderADay(t *testing.T, b *bundle, seq uint64, day time.Time, purged bool) {
	t.Helper()
	ctx := context.Background()
	st, err := readStored(ctx, b.js, "DLQ", seq, false)
	require.NoError(t, err)
	rec := ParseDLQ("dlq", sweptReceived("DLQ", st))
	rec.DeadLetteredAt = day
	rec.flag("implausible:dead_lettered_at", "kept under the day it arrived")
	if purged {
		_, err = b.db.OwnerPool.Exec(ctx, `INSERT INTO dead_letters_purged (dead_lettered_at, source_key, stream, stream_seq) VALUES ($1, $2, 'DLQ', $3)`,
			day, rec.SourceKey[:], int64(seq))
		require.NoError(t, err)
		return
	}
	res, err := b.store.Insert(ctx, []Record{rec})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 1)
}

// TestSweep2FindsRowsKeptUnderTheDayTheyArrived: a dead letter JetStream
// stored by a clock ingest found implausible is stored under the midnight
// of the day it arrived, outside the stored-time range the sweep looks in.
// The sweep finds it by its source key all the same: no second row (the
// sweep's record would be kept under another day), counted as found
// stored, not as stored; nor is one whose row retention removed (its key
// kept under that day) brought back.
func TestSweep2FindsRowsKeptUnderTheDayTheyArrived(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, m := b.idle(t, IngestConfig{})
	for _, p := range []string{"stored yesterday", "purged", "never stored"} {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(p)})
	}
	yesterday := Day(time.Now()).Add(-24 * time.Hour)
	storedUnderADay(t, b, 1, yesterday, false)
	storedUnderADay(t, b, 2, yesterday, true)
	b.peek(t, "DLQ", 3)

	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'stored yesterday'"), "no second row")
	assert.Zero(t, countRows(t, b.db.Pool, "payload = 'purged'"), "what retention removed stays removed")
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'never stored'"))
	assert.Equal(t, uint64(1), res.Stored)
	assert.Equal(t, uint64(2), res.AlreadyStored)
	assert.Equal(t, 1, swept(m, "DLQ", "stored"))
	assert.Equal(t, int64(3), b.sweptTo(t, "DLQ"))
}
