package dlq

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// revFix9PurgeRows is how many dead letters the purged day holds: a busy
// day of a noisy tenant (a few hundred thousand is ordinary for a DLQ).
const revFix9PurgeRows = 200_000

// TestRevFix9DayPurgeStallsTodaysPages: migration 0047 makes a day's purge
// take ACCESS EXCLUSIVE on the day's partition up front (holdDay), before
// it counts the day (selectDayContents: a full scan grouping every row),
// keeps its replay origins and TRUNCATEs it, and holds it to the commit.
// The lock_timeout of 2 s bounds only the wait FOR that lock, not how long
// it is held. Every query on dead_letters that the planner cannot prune to
// other days (the dead letters page with no time bound: its default view,
// newest first, of today's dead letters) needs ACCESS SHARE on every
// partition, so it queues behind the purge for the whole count of an old
// day it never shows. Before 0047 the count ran under SHARE (reads went
// on) and only the TRUNCATE-to-commit tail blocked readers. The test fills
// a past day with revFix9PurgeRows dead letters, runs a keeper pass, and
// once the purge holds the day reads the first page of today's dead
// letters: it must answer in well under a second, as it does when no
// purge runs; it waits for the purge instead.
func TestRevFix9DayPurgeStallsTodaysPages(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	st := NewStore(db.Pool)
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	t.Cleanup(admin.Close)

	old := Day(time.Now()).AddDate(0, 0, -10)
	rec := func(at time.Time, seq uint64) Record {
		return ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: seq,
			Time: at, Data: []byte(fmt.Sprintf(`{"order":%d}`, seq))})
	}
	filled := time.Now()
	const batch = 5000
	for first := uint64(1); first <= revFix9PurgeRows; first += batch {
		recs := make([]Record, 0, batch)
		for seq := first; seq < first+batch && seq <= revFix9PurgeRows; seq++ {
			recs = append(recs, rec(old.Add(time.Hour+time.Duration(seq)*100*time.Millisecond), seq))
		}
		res, err := st.Insert(ctx, recs)
		require.NoError(t, err)
		require.Len(t, res.Inserted, len(recs))
	}
	// Today's dead letters, which the page shows.
	var today []Record
	for seq := uint64(revFix9PurgeRows + 1); seq <= revFix9PurgeRows+20; seq++ {
		today = append(today, rec(time.Now().Add(-time.Duration(seq-revFix9PurgeRows)*time.Second), seq))
	}
	_, err = st.Insert(ctx, today)
	require.NoError(t, err)
	_, err = db.OwnerPool.Exec(ctx, `UPDATE dead_letters SET received_at = dead_lettered_at WHERE dead_lettered_at < $1`, old.AddDate(0, 0, 1))
	require.NoError(t, err)
	_, err = FoldCounters(ctx, db.Pool)
	require.NoError(t, err)
	_, err = db.OwnerPool.Exec(ctx, `VACUUM ANALYZE dead_letters`)
	require.NoError(t, err)
	t.Logf("filled %d dead letters of %s in %s", revFix9PurgeRows, old.Format(time.DateOnly), time.Since(filled))

	page := ListFilter{Tenants: []string{"acme"}}
	start := time.Now()
	p, err := st.ListDeadLetters(ctx, page)
	require.NoError(t, err)
	require.NotEmpty(t, p.Items)
	idle := time.Since(start)
	t.Logf("today's first page with no purge running: %s", idle)

	k := NewKeeper(st, KeeperConfig{Policy: func() RetentionPolicy { return keepAll3dRevIngest9{} }}, nil,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	type result struct {
		pass KeeperPass
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	passStart := time.Now()
	go func() {
		passCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		kp, err := k.Pass(passCtx)
		done <- result{kp, err, time.Since(passStart)}
	}()
	// The purge holds the old day as TRUNCATE does.
	var rel uint32
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT $1::regclass::oid`, PartitionName(old)).Scan(&rel))
	var early *result
	wait.Until(t, "the purge holding the old day ACCESS EXCLUSIVE", 60*time.Second, func() bool {
		select {
		case r := <-done:
			early = &r
			return true
		default:
		}
		var n int
		err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
            WHERE d.datname = $1 AND l.granted AND l.mode = 'AccessExclusiveLock' AND l.relation = $2`, db.Name, rel).Scan(&n)
		return err == nil && n > 0
	})
	if early != nil {
		t.Fatalf("the pass ended (%s, err %v) before the old day was seen held: runs %+v", early.took, early.err, early.pass.Runs)
	}
	held := time.Now()
	ingested := make(chan time.Duration, 1)
	go func() {
		s := time.Now()
		_, err := st.Insert(ctx, []Record{rec(time.Now(), revFix9PurgeRows+100)})
		assert.NoError(t, err)
		ingested <- time.Since(s)
	}()
	dashboard := make(chan time.Duration, 1)
	go func() {
		s := time.Now()
		_, err := st.Dashboard(ctx, DashboardQuery{Tenants: []string{"acme"}, Now: time.Now()})
		assert.NoError(t, err)
		dashboard <- time.Since(s)
	}()
	start = time.Now()
	p, err = st.ListDeadLetters(ctx, page)
	stalled := time.Since(start)
	require.NoError(t, err)
	r := <-done
	t.Logf("a dead letter of today stored under the purge in %s; the dashboard read in %s", <-ingested, <-dashboard)
	require.NoError(t, r.err)
	var emptied bool
	for _, run := range r.pass.Runs {
		emptied = emptied || run.Partition == PartitionName(old)
	}
	t.Logf("purge pass %s (old day emptied whole: %v; held from lock seen to pass end: %s); today's first page under it: %s",
		r.took, emptied, time.Since(held), stalled)
	assert.NotEmpty(t, p.Items)
	assert.Less(t, stalled, time.Second,
		"the dead letters page of today waited %s for the purge of a day it does not show (no purge: %s)", stalled, idle)
}
