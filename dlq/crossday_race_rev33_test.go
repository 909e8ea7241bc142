package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest33RedeliveryAcrossMidnightRacingIsStoredOnce: a message
// whose NATS stored time is implausible is kept under the midnight of the
// day it arrives. One ingester stores it just before UTC midnight; its
// ack is lost and another ingester, just after, stores the redelivery
// under the next day while the first has not committed. Each looked the
// key up under every day (keptUnderADay) and missed the other's row,
// uncommitted, and the unique index, on (dead_lettered_at, source_key),
// holds the two days apart: two rows for one message. The second now
// waits for the first's commit (lockSourceKeys) and finds its row.
func TestRevIngest33RedeliveryAcrossMidnightRacingIsStoredOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	store := NewStore(db.Pool)
	reset := time.Date(2000, 1, 1, 0, 3, 7, 0, time.UTC)
	m := Received{Subject: "dlq.acme.orders.refund", Header: map[string][]string{HeaderOriginalSubject: {"app.acme.orders.refund"}},
		Data: []byte(`{"n":1}`), Stream: "DLQ", Seq: 733, Time: reset}
	first := ParseDLQ("dlq", m)
	require.Contains(t, first.Flags, FlagImplausibleStoredAt)
	today := Day(time.Now())
	first.DeadLetteredAt = today.Add(-24 * time.Hour) // kept under yesterday, where it arrived just before midnight
	require.NoError(t, store.EnsurePartitions(ctx, []time.Time{first.DeadLetteredAt, today}))
	again := ParseDLQ("dlq", m) // the redelivery, today
	require.Equal(t, first.SourceKey, again.SourceKey)
	require.True(t, again.DeadLetteredAt.Equal(today))

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	in, _, err := copyTx(ctx, boundedTx{Tx: tx, s: store}, copyRows([]Record{first}, time.Now()), true)
	require.NoError(t, err)
	require.Len(t, in, 1, "the first delivery's row, not yet committed")

	done := make(chan error, 1)
	go func() {
		_, err := store.Insert(ctx, []Record{again})
		done <- err
	}()
	// The redelivery waits for a lock the first holds (or is stored at
	// once); then the first commits.
	var finished bool
	require.NoError(t, wait.Poll(30*time.Second, 10*time.Millisecond, func() error {
		select {
		case err := <-done:
			finished = true
			if err != nil {
				return wait.Stop(err)
			}
			return nil
		default:
		}
		var waiting int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			return err
		}
		if waiting == 0 {
			return wait.ErrNotYet
		}
		return nil
	}))
	require.NoError(t, tx.Commit(ctx))
	if !finished {
		require.NoError(t, <-done)
	}
	var rows int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE source_key = $1`, first.SourceKey[:]).Scan(&rows))
	assert.Equal(t, 1, rows, "one stream message, one row")
}
