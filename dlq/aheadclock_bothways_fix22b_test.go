package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// aheadClockMessage is a DLQ stream message stored by a NATS server clock
// 399 days ahead less an hour: within maxStoredAhead of now, beyond it of
// a clock a day behind.
func aheadClockMessage(seq uint64, now time.Time) Received {
	return Received{Subject: "dlq.acme.orders.refund", Header: map[string][]string{HeaderOriginalSubject: {"app.acme.orders.refund"}},
		Data: []byte(`{"n":1}`), Stream: "DLQ", Seq: seq, Time: now.Add(maxStoredAhead - time.Hour).UTC().Truncate(time.Microsecond)}
}

// countRowsOf counts the rows of source key key.
func countRowsOf(t *testing.T, store *Store, key [32]byte) int {
	t.Helper()
	var rows int
	require.NoError(t, store.pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters WHERE source_key = $1`, key[:]).Scan(&rows))
	return rows
}

// TestRevIngest22AheadClockStoredThenJudgedImplausibleNotStoredAgain is
// TestRevIngest22AheadClockRedeliveryJudgedPlausibleStoredAgain the other
// way round: the first delivery found the stored time within
// maxStoredAhead and kept the row under it; a later one, judged by a
// replica whose clock is a day behind, finds it beyond and keeps it under
// the day it arrived. It looks its key up under the stored time its
// delivery names (unstored), and finds the row, or the key retention kept
// of it. The same message twice in one batch, judged both ways, is one
// row, whichever comes first.
func TestRevIngest22AheadClockStoredThenJudgedImplausibleNotStoredAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := NewStore(testdb.New(t).Pool)
	now := time.Now()
	behind := func(r Record) Record { // as a replica whose clock is a day behind judges it
		r.Flags = append([]string(nil), r.Flags...)
		r.checkStoredAt(now.Add(-24 * time.Hour))
		require.Contains(t, r.Flags, FlagImplausibleStoredAt, "a day behind, the stored time is more than %s ahead", maxStoredAhead)
		return r
	}
	t.Run("StoredUnderItsTime", func(t *testing.T) {
		first := ParseDLQ("dlq", aheadClockMessage(620, now))
		require.NotContains(t, first.Flags, FlagImplausibleStoredAt)
		res, err := store.Insert(ctx, []Record{first})
		require.NoError(t, err)
		require.Len(t, res.Inserted, 1)

		again := behind(ParseDLQ("dlq", aheadClockMessage(620, now)))
		require.Equal(t, first.SourceKey, again.SourceKey)
		res, err = store.Insert(ctx, []Record{again})
		require.NoError(t, err)
		assert.Empty(t, res.Inserted)
		assert.Equal(t, 1, countRowsOf(t, store, first.SourceKey))
	})
	t.Run("PurgedItsKeyKept", func(t *testing.T) {
		first := ParseDLQ("dlq", aheadClockMessage(621, now))
		_, err := store.pool.Exec(ctx, `INSERT INTO dead_letters_purged (dead_lettered_at, source_key, stream, stream_seq) VALUES ($1, $2, 'DLQ', 621)`,
			first.DeadLetteredAt, first.SourceKey[:])
		require.NoError(t, err)

		res, err := store.Insert(ctx, []Record{behind(ParseDLQ("dlq", aheadClockMessage(621, now)))})
		require.NoError(t, err)
		assert.Empty(t, res.Inserted)
		assert.Equal(t, 0, countRowsOf(t, store, first.SourceKey))
	})
	for i, order := range []string{"PlausibleFirstInTheBatch", "ImplausibleFirstInTheBatch"} {
		t.Run(order, func(t *testing.T) {
			seq := uint64(622 + i)
			plausible := ParseDLQ("dlq", aheadClockMessage(seq, now))
			batch := []Record{plausible, behind(plausible)}
			if i == 1 {
				batch[0], batch[1] = batch[1], batch[0]
			}
			res, err := store.Insert(ctx, batch)
			require.NoError(t, err)
			assert.Len(t, res.Inserted, 1)
			assert.Equal(t, 1, countRowsOf(t, store, plausible.SourceKey))
		})
	}
}

// TestRevIngest22AheadClockRedeliveryOfAPurgedRowNotStoredAgain: the
// first delivery, judged a day ago, kept the row under that day's
// midnight and retention removed it, keeping its key; the redelivery,
// which finds the stored time within maxStoredAhead, finds the key
// (keptUnderAnyDay) and is not stored again.
func TestRevIngest22AheadClockRedeliveryOfAPurgedRowNotStoredAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := NewStore(testdb.New(t).Pool)
	now := time.Now()
	again := ParseDLQ("dlq", aheadClockMessage(630, now))
	require.NotContains(t, again.Flags, FlagImplausibleStoredAt)
	_, err := store.pool.Exec(ctx, `INSERT INTO dead_letters_purged (dead_lettered_at, source_key, stream, stream_seq) VALUES ($1, $2, 'DLQ', 630)`,
		Day(now.Add(-24*time.Hour)), again.SourceKey[:])
	require.NoError(t, err)
	res, err := store.Insert(ctx, []Record{again})
	require.NoError(t, err)
	assert.Empty(t, res.Inserted)
	assert.Equal(t, 0, countRowsOf(t, store, again.SourceKey))
}

// TestAheadClockOnlyFarAheadStoredTimesLookUnderOtherDays: the hot path
// stays as it was. A stored time up to farAhead past now (clocks a little
// apart) is not looked up under other days; one further ahead is, and so
// is a row kept under the day it arrived.
func TestAheadClockOnlyFarAheadStoredTimesLookUnderOtherDays(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, c := range []struct {
		name  string
		ahead time.Duration
		look  bool
	}{
		{"Past", -time.Second, false},
		{"SkewedAhead", time.Hour, false},
		{"AWeekAhead", farAhead, false},
		{"MoreThanAWeekAhead", farAhead + time.Minute, true},
		{"NearTheBound", maxStoredAhead - time.Hour, true},
		{"BeyondTheBound", maxStoredAhead + time.Hour, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: 1, Time: now.Add(c.ahead)})
			r.checkStoredAt(now)
			assert.Equal(t, c.look, r.mayBeKeptUnderAnotherDay(now))
			assert.Equal(t, c.look, mayBePurged([]Record{r}, now))
		})
	}
}
