package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest10DayPurgeHoldsTruncateLockWhileWaitingForTheAuditChain:
// a day's purge TRUNCATEs the day (ACCESS EXCLUSIVE on its partition) and
// only then appends its audit rows and checkpoint (purgeDay: "readers of
// the day wait from the TRUNCATE's lock to the commit, and only the audit
// rows and the checkpoint come in between"). Appending waits for the audit
// chain's advisory lock, which every auditing transaction holds to its
// commit, for up to the run's lock_timeout of 5 s. So one slow or stuck
// auditing transaction (a large submit, a bulk close, a session idle in
// its transaction after an append) keeps the old day locked ACCESS
// EXCLUSIVE, and every read of dead_letters the planner cannot prune to
// other days (the dead letters page's default view of today, which locks
// every partition) waits with it, though it shows nothing of that day.
// The page should answer while the purge waits for the chain (take the
// chain before the TRUNCATE, or give way as for the TRUNCATE's lock).
func TestRevIngest10DayPurgeHoldsTruncateLockWhileWaitingForTheAuditChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, st, day := pastDayOfThree(t)
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	_, err = st.Insert(ctx, []Record{ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: 100,
		Time: time.Now(), Data: []byte("today")})})
	require.NoError(t, err)

	// The console keeps its counters snapshot fresh in the background, as
	// serve does: the page reads only its own query.
	cctx, stopCounters := context.WithCancel(ctx)
	t.Cleanup(stopCounters)
	go st.Counters().Run(cctx)
	wait.Until(t, "the counters snapshot read and clean", 30*time.Second, func() bool {
		s := st.Counters().snap.Load()
		return st.Counters().running.Load() && s != nil && !st.Counters().dirty.Load() && len(s.Combos) > 0
	})

	// An auditing transaction that has appended and not yet committed.
	auditing, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = auditing.Rollback(context.Background()) })
	_, err = audit.Append(ctx, auditing, audit.Event{Actor: quarantine.Actor{Subject: "someone"}, Tenant: "acme",
		Action: audit.ActionDeadLetterDiscard, Outcome: audit.OutcomeOK, ObjectType: "dead_letter", ObjectID: "1", Reason: "slow"})
	require.NoError(t, err)

	var rel uint32
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT $1::regclass::oid`, PartitionName(day)).Scan(&rel))
	k := NewKeeper(st, KeeperConfig{Policy: func() RetentionPolicy { return keepAll3dRevIngest9{} }}, nil,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan error, 1)
	go func() {
		_, err := k.Pass(ctx)
		done <- err
	}()
	// Before the fix the purge waited for the chain holding the emptied
	// day ACCESS EXCLUSIVE (held > 0); fixed, it appends before the
	// TRUNCATE and waits holding only the day's SHARE lock, so the wait
	// asks for the purge waiting on the chain alone, whatever it holds.
	wait.Until(t, "the purge waiting for the audit chain", 30*time.Second, func() bool {
		var held, waiting int
		err := admin.QueryRow(ctx, `SELECT
            count(*) FILTER (WHERE l.granted AND l.mode = 'AccessExclusiveLock' AND l.relation = $2),
            count(*) FILTER (WHERE NOT l.granted AND l.locktype = 'advisory')
            FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE d.datname = $1`, db.Name, rel).Scan(&held, &waiting)
		return err == nil && waiting > 0
	})

	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	p, err := st.ListDeadLetters(pctx, ListFilter{Tenants: []string{"acme"}})
	took := time.Since(start)
	require.NoError(t, err, "today's first page answers while the purge of a day ten days back waits for the audit chain (took %s)", took)
	require.NotEmpty(t, p.Items)
	require.NoError(t, auditing.Rollback(ctx))
	require.NoError(t, <-done)
}
