package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRevIngest18bResetClockRedeliveryOnALaterDayStoredAgain: severity
// medium.
//
// A dead letter whose NATS server clock was reset (stored at 2000-01-01)
// is kept under the midnight of the UTC day it arrived (checkStoredAt);
// its source key names the stored time, not that day, and the unique
// index is (dead_lettered_at, source_key). The sweep looks such a key up
// under every partition's midnight and in the kept keys
// (sweepKeptUnderADay), so its re-read on a later day makes no second
// row (TestSweep2FindsRowsKeptUnderTheDayTheyArrived). Store.Insert, which
// every delivery goes through, looks only under the record's own day
// (storedKeys): a redelivery of the same stream message on a later UTC day
// (its ack lost, a batch handed back across midnight, the consumer made
// again from the stream's first message, or moved back) is a second row,
// and one whose row retention removed comes back as a new quarantined
// dead letter. Expected: one row per stream message, as the sweep already
// guarantees.
//
// The first delivery is simulated as checkStoredAt made it yesterday: the
// same record, its dead-lettered time yesterday's midnight.
func TestRevIngest18bResetClockRedeliveryOnALaterDayStoredAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := NewStore(testdb.New(t).Pool)
	yesterday := Day(time.Now()).Add(-24 * time.Hour)
	reset := time.Date(2000, 1, 1, 0, 3, 7, 0, time.UTC) // the RTC's reset value, counted on from there
	for i, c := range []struct {
		why    string
		purged bool
	}{
		{"its row is stored under the day it arrived", false},
		{"retention removed its row, its key kept", true},
	} {
		t.Run(c.why, func(t *testing.T) {
			seq := uint64(500 + i)
			m := Received{Subject: "dlq.acme.orders.refund", Header: map[string][]string{HeaderOriginalSubject: {"app.acme.orders.refund"}},
				Data: []byte(`{"n":1}`), Stream: "DLQ", Seq: seq, Time: reset}
			first := ParseDLQ("dlq", m)
			require.Contains(t, first.Flags, FlagImplausibleStoredAt)
			first.DeadLetteredAt = yesterday // what checkStoredAt made of it when it arrived yesterday
			if c.purged {
				_, err := store.pool.Exec(ctx, `INSERT INTO dead_letters_purged (dead_lettered_at, source_key, stream, stream_seq) VALUES ($1, $2, 'DLQ', $3)`,
					yesterday, first.SourceKey[:], int64(seq))
				require.NoError(t, err)
			} else {
				res, err := store.Insert(ctx, []Record{first})
				require.NoError(t, err)
				require.Len(t, res.Inserted, 1)
			}

			again := ParseDLQ("dlq", m) // the same stream message delivered again today
			require.Equal(t, first.SourceKey, again.SourceKey, "the same message, the same key")
			res, err := store.Insert(ctx, []Record{again})
			require.NoError(t, err)
			var rows int
			require.NoError(t, store.pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE source_key = $1`, first.SourceKey[:]).Scan(&rows))
			want := 1
			if c.purged {
				want = 0
			}
			assert.Equal(t, want, rows, "one stream message, %d rows (%d inserted by the redelivery)", rows, len(res.Inserted))
		})
	}
}
