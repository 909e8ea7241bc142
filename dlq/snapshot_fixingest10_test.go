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

// TestFixIngest10SnapshotReadUnderWayWaitsForOne: a day's partition held
// ACCESS EXCLUSIVE (retention's TRUNCATE to its commit) holds up a read of
// the counters snapshot, which looks at every partition. Page requests
// that find the snapshot to be read again (an announcement came) do not
// all queue behind that one read: the first reads (and waits), the others
// go on at once with the snapshot there is.
func TestFixIngest10SnapshotReadUnderWayWaitsForOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, st, day := pastDayOfThree(t)
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	c := st.Counters()
	before, err := c.Refresh(ctx)
	require.NoError(t, err)

	purge, err := db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = purge.Rollback(context.Background()) })
	_, err = purge.Exec(ctx, `LOCK TABLE `+PartitionName(day)+` IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	c.dirty.Store(true) // an announcement came
	first := make(chan error, 1)
	go func() {
		_, err := c.Snapshot(ctx)
		first <- err
	}()
	waitingOnLock(t, admin, db, "the first request's read waiting for the day", "%dead_letters%", 1)

	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s, err := c.Snapshot(sctx)
	require.NoError(t, err, "another request does not queue behind the read under way")
	assert.Same(t, before, s, "it goes on with the snapshot there is")

	require.NoError(t, purge.Rollback(ctx))
	require.NoError(t, <-first)
	assert.NotSame(t, before, c.snap.Load(), "the first request's read is the new snapshot")
}
