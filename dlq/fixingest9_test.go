package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestFixIngest9OtherDaysDoNotWaitForADaysPurge: while retention holds a
// past day's partition as TRUNCATE does (holdDay, until its commit), a
// batch of late or redelivered dead letters of other days, which looks up
// the stored source keys first, is stored at once: the look-up reads only
// the partitions of the batch's days. A batch of the held day waits and
// is stored once the purge ends; a redelivery (a stored time with
// nanoseconds past the microsecond, which the look-up's text must not
// round) is still found stored.
func TestFixIngest9OtherDaysDoNotWaitForADaysPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	st := NewStore(db.Pool)
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	held, other := Day(time.Now()).AddDate(0, 0, -10), Day(time.Now()).AddDate(0, 0, -11)
	rec := func(day time.Time, seq uint64) Record {
		return ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: seq,
			Time: day.Add(time.Hour + time.Duration(seq)*time.Second + 999*time.Nanosecond), Data: []byte("order")})
	}
	res, err := st.Insert(ctx, []Record{rec(held, 1), rec(other, 2)})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 2)

	purge, err := db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = purge.Rollback(context.Background()) })
	_, err = purge.Exec(ctx, `SELECT quarantine_dead_letter_partition_hold($1)`, PartitionName(held))
	require.NoError(t, err)

	quick, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err = st.Insert(quick, []Record{rec(other, 2), rec(other, 3)})
	require.NoError(t, err, "a batch of another day does not wait for the held day")
	assert.Len(t, res.Inserted, 1, "the redelivery is found stored, the late dead letter stored")

	waited := make(chan error, 1)
	go func() {
		res, err := st.Insert(ctx, []Record{rec(held, 1), rec(held, 4)})
		if err == nil && len(res.Inserted) != 1 {
			err = assert.AnError
		}
		waited <- err
	}()
	waitingOnLock(t, admin, db, "the held day's batch waiting for the purge", "%", 1)
	require.NoError(t, purge.Rollback(ctx))
	select {
	case err := <-waited:
		require.NoError(t, err, "stored once the purge ended, the redelivery found stored")
	case <-time.After(30 * time.Second):
		t.Fatal("the held day's batch did not end")
	}
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&n))
	assert.Equal(t, 4, n, "one row per message")
}
