package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest13WatchersReadHasNoDeadline: round 12 gave every statement
// the ingester runs in PostgreSQL a client-side deadline (Store.within),
// so that a connection that hangs without an error fails the attempt
// instead of holding ingest. The new ingest_watchers queries
// (ingest_watchers.go: announceWatch, watchedByAny, retireWatch) run on
// in.store.pool with the caller's context and no deadline. watchedByAny
// runs inside handleAdvisory, on the advisory puller's one callback
// goroutine, for every advisory of a stream this replica does not watch:
// one such advisory (here of EMAILS, which another replica, still on a
// longer list in a rolling deploy, watches) whose read of ingest_watchers hangs holds
// the callback, and with it every later advisory of the streams this
// replica DOES watch: ORDERS' give-up is not captured while it hangs (with
// a blackholed connection, until the kernel gives the socket up, ~15 min).
// With the deadline the read fails after 1.5 s, the EMAILS advisory is
// handed back (watchedElsewhere) and the ORDERS one is stored.
func TestRevIngest13WatchersReadHasNoDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	cfg := b.db.Pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "0" // the server never ends a statement: a hung connection
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b.store = NewStore(pool)
	ic := IngestConfig{Watch: b.watchOrders(t), BatchSize: 100, Workers: 1, MaxWait: 50 * time.Millisecond,
		StatementTimeout: 500 * time.Millisecond, HealthEvery: time.Hour}
	require.Equal(t, 1500*time.Millisecond, ic.statementDeadline())
	// Another replica, still on a longer list (a rolling deploy), watches
	// EMAILS too: its subjects are on the advisory stream.
	both, err := ParseWatchStreams("ORDERS,EMAILS")
	require.NoError(t, err)
	b.idle(t, IngestConfig{Watch: both})
	b.start(t, ic, nil)

	lock, err := b.db.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, `LOCK TABLE ingest_watchers IN ACCESS EXCLUSIVE MODE`) // every read of it waits: it hangs
	require.NoError(t, err)

	publish(t, b.js, terminatedAdvisory("EMAILS", 1))
	publish(t, b.js, terminatedAdvisory("ORDERS", 1))
	wait.Until(t, "the give-up of ORDERS, a watched stream, captured while ingest_watchers does not answer",
		3*ic.statementDeadline()+15*time.Second, func() bool {
			return countRows(t, b.db.Pool, "source_stream = 'ORDERS'") == 1
		})
}

// TestRevIngest13DropUnwatchedTakesOffAStreamJustAnnounced: keepWatchers
// reads the streams live replicas watch (watchedByAny), THEN reads the
// advisory stream and writes it back without the subjects of streams not
// in that list (dropUnwatched). A replica that starts in between (a
// rolling deploy adding EMAILS: Setup announces EMAILS, then puts its
// subjects on the advisory stream, "so that no replica ever receives one
// of their advisories without knowing a replica watches them") has its
// new subjects taken off at once by the older replica, on a list read
// before it announced: EMAILS' give-ups are not captured (JetStream's
// advisories are not kept by anyone) until the new replica's next check
// puts them back. The runbook says a stream added "is captured whole, by
// the new replicas, from the first one on". Here the interleaving is
// run step by step: keepWatchers' read, the new replica's Setup, then
// keepWatchers' drop.
func TestRevIngest13DropUnwatchedTakesOffAStreamJustAnnounced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	old, _ := b.idle(t, IngestConfig{Watch: b.watchOrders(t)})
	names, err := old.watchedByAny(ctx) // keepWatchers, first step
	require.NoError(t, err)

	both, err := ParseWatchStreams("ORDERS,EMAILS")
	require.NoError(t, err)
	b.idle(t, IngestConfig{Watch: both}) // a new replica starts: announces EMAILS, adds its subjects

	require.NoError(t, old.dropUnwatched(ctx, names)) // keepWatchers, second step
	s, err := b.js.Stream(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	require.Subset(t, s.CachedInfo().Config.Subjects, []string{AdvisoryMaxDeliveries + ".EMAILS.*", AdvisoryTerminated + ".EMAILS.*"},
		"a running replica watches EMAILS (announced before its subjects were added)")
}
