package dlq

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
)

// The counter tables (dead_letter_counts, dead_letter_arrivals,
// dead_letter_arrivals_minute, dead_letter_groups) are kept by the console,
// never by triggers on dead_letters (migration 0015). One summary of a
// summary is kept by triggers on a counter table: the arrivals per tenant
// and hour (dead_letter_arrivals_tenant_hour, migration 0061) follow every
// write of dead_letter_arrivals, so that a fold of a console of an older
// version adds to them too; the fold writes a few rows there twice a
// second, ingest none.
//
//   - the ingester's transaction (Store.Insert) appends its deltas to
//     dead_letter_deltas, one row per touched combination (tenant, item type, class, status, error
//     group, minute), insert-only, so concurrent writers never wait for
//     each other nor update a row; it also makes sure the combination has a
//     counter row (INSERT ... ON CONFLICT DO NOTHING: nothing is written for
//     one that exists), so the list's lanes include it at once. Only a
//     combination the statement's snapshot does not hold goes to that
//     insert: its unique check would wait for any open transaction that
//     updated the row (a submit's or a cancel's StatusMove, a retention
//     run), and the batch, one statement over every tenant, with it;
//   - FoldCounters moves the deltas into the counters, one folder at a time
//     (an advisory lock), about twice a second (RunFolder): each counter
//     row is updated at most that often and by one backend, so the update
//     is HOT and the version it replaces is pruned on the page;
//   - a status change (StatusMove) or a retention run (subtract) updates
//     the counters itself, in its own statement: those are few. Neither
//     changes dead_letter_groups.arrived, which counts arrivals only (what
//     a snooze "until N more arrive" counts from, migration 0058).
//
// Counts therefore lag ingest by at most a fold (FoldEvery), and are exact
// once it ran. Every upsert takes its keys of a table in order (ORDER BY
// the key), so two statements of one kind cannot deadlock on a table. The
// order of the tables is PostgreSQL's to choose among a statement's
// data-modifying CTEs, and differs between a fold, a status change and a
// retention run (review round 35 saw groups then counts against counts
// then groups): two of them meeting on one group's rows can deadlock, and
// PostgreSQL then rolls one back. Nothing is lost: a fold's deltas wait
// for the next fold, a status change is retried (dlq.InTx), and a
// retention run gives way until its next pass.
//
// A counter row seen for the first time (a new tenant, item type, class or
// status) is announced on CountersChannel when the statement commits, so
// every console refreshes its snapshot (Counters) at once.

// CountersChannel is the LISTEN/NOTIFY channel of new counter rows.
const CountersChannel = "quarantine_counters"

// FoldEvery is how often RunFolder folds the deltas into the counters.
const FoldEvery = 500 * time.Millisecond

// arrivalDeltas are the CTEs that record the rows of "ins" (id, tenant,
// item_type, error_class, status, fingerprint, dead_lettered_at) as new
// dead letters in dead_letter_deltas, give new combinations their counter
// row, and "announce", which notifies CountersChannel when one was new; a
// statement using them must read announce (an unread plain CTE is not
// run).
const arrivalDeltas = `
deltas AS (
    INSERT INTO dead_letter_deltas (tenant, item_type, error_class, status, fingerprint, minute, n,
        first_seen, last_seen, sample_id, sample_at)
    SELECT tenant, item_type, error_class, status, fingerprint,
           date_bin('1 minute', dead_lettered_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'), count(*),
           min(dead_lettered_at), max(dead_lettered_at), max(id), (array_agg(dead_lettered_at ORDER BY id DESC))[1]
    FROM ins GROUP BY 1, 2, 3, 4, 5, 6
), ` + newCombinations

// newCombinations are the CTEs that give the combinations of tenant,
// item type, class and status in "ins" (a CTE with those columns) that
// have no counter row theirs, and "announce", which notifies
// CountersChannel when one was new; a statement using them must read
// announce (an unread plain CTE is not run).
const newCombinations = `known AS (
    INSERT INTO dead_letter_counts (tenant, item_type, error_class, status, n)
    SELECT DISTINCT tenant, item_type, error_class, status, 0 FROM ins i
    WHERE NOT EXISTS (SELECT 1 FROM dead_letter_counts c
        WHERE (c.tenant, c.item_type, c.error_class, c.status) = (i.tenant, i.item_type, i.error_class, i.status))
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant, item_type, error_class, status) DO NOTHING
    RETURNING 1
), announce AS (
    SELECT count(pg_notify('` + CountersChannel + `', '')) AS n FROM (SELECT 1 FROM known LIMIT 1) x
)`

// foldLockKey serialises the folders ("QDLFOLD").
const foldLockKey int64 = 0x51444c464f4c4400

// foldChunk is how many delta rows one fold takes at most. A fold is one
// statement under the workers' statement timeout: one that took every
// delta at once ran longer with each turn after a flood or an outage of
// the folder (a delta per batch, tenant, item type, class, fingerprint
// and minute: a producer whose errors all differ makes one per dead
// letter), and once it outlasted the timeout it rolled back, every turn,
// for good, and every count, group and snooze stood still (review round
// 39: 400,000 deltas in 7.8 s here). A chunk of deltas that each make a
// group of their own, the worst case, folds in 1 to 3 s here; a turn
// folds chunk after chunk until one comes back short. A chunk that
// outlasts the statement timeout (DATABASE_WORKER_STATEMENT_TIMEOUT may
// be as short as 100 ms) halves the chunks for the next turn, down to
// minFoldChunk, and a turn that folds everything doubles them back. The
// counters add, take the least and the greatest, so folding in chunks
// changes no result.
const foldChunk = 50000

// minFoldChunk is the least a chunk is halved to.
const minFoldChunk = 500

// fold moves at most $1 deltas committed so far into the counters, in
// one statement: the deltas it deletes are exactly the ones it counts.
const fold = `
WITH d AS (
    DELETE FROM dead_letter_deltas
    WHERE ctid = ANY (ARRAY(SELECT ctid FROM dead_letter_deltas LIMIT $1))
    RETURNING *
), counted AS (
    INSERT INTO dead_letter_counts AS c (tenant, item_type, error_class, status, n)
    SELECT tenant, item_type, error_class, status, sum(n) FROM d
    GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant, item_type, error_class, status) DO UPDATE SET n = c.n + excluded.n
), hours AS (
    INSERT INTO dead_letter_arrivals AS a (tenant, hour, item_type, error_class, n)
    SELECT tenant, date_bin('1 hour', minute, TIMESTAMPTZ '2000-01-01 00:00:00+00'), item_type, error_class, sum(n)
    FROM d GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant, hour, item_type, error_class) DO UPDATE SET n = a.n + excluded.n
), minutes AS (
    INSERT INTO dead_letter_arrivals_minute AS a (tenant, minute, n)
    SELECT tenant, minute, sum(n) FROM d GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (tenant, minute) DO UPDATE SET n = a.n + excluded.n
), grouped AS (
    INSERT INTO dead_letter_groups AS g (tenant, fingerprint, item_type, error_class, n, unresolved, arrived, first_seen, last_seen,
        sample_id, sample_at)
    SELECT tenant, fingerprint, item_type, min(error_class), sum(n), coalesce(sum(n) FILTER (WHERE dead_letter_unresolved(status)), 0),
           sum(n), min(first_seen), max(last_seen), max(sample_id), (array_agg(sample_at ORDER BY sample_id DESC))[1]
    FROM d GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (tenant, fingerprint, item_type) DO UPDATE SET
        n = g.n + excluded.n,
        -- every delta is an arrival; only the fold adds to arrived
        arrived = g.arrived + excluded.arrived,
        unresolved = g.unresolved + excluded.unresolved,
        first_seen = least(g.first_seen, excluded.first_seen),
        last_seen = greatest(g.last_seen, excluded.last_seen),
        -- the SET list reads the row as it was: sample_at follows sample_id
        sample_at = CASE WHEN excluded.sample_id > g.sample_id THEN excluded.sample_at ELSE g.sample_at END,
        sample_id = greatest(g.sample_id, excluded.sample_id)
)
SELECT count(*) FROM d`

// FoldCounters moves every delta committed before it into the counters,
// waiting for a fold under way in another console first, and returns how
// many delta rows it folded. Tests call it to make counts exact at once.
func FoldCounters(ctx context.Context, db beginner) (int64, error) {
	var total int64
	for {
		n, _, err := foldCounters(ctx, db, true, foldChunk)
		total += n
		if err != nil || n < foldChunk {
			return total, err
		}
	}
}

// foldCounters folds at most limit deltas under the folders' advisory
// lock: waiting for it, or when another console holds it, folding nothing
// (xid 0). It returns how many it folded and the fold's transaction id.
func foldCounters(ctx context.Context, db beginner, wait bool, limit int) (n int64, xid int64, err error) {
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if wait {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, foldLockKey); err != nil {
				return err
			}
		} else {
			var mine bool
			if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, foldLockKey).Scan(&mine); err != nil || !mine {
				return err // another console is folding
			}
		}
		if err := tx.QueryRow(ctx, fold, limit).Scan(&n); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&xid)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("fold counters: %w", err)
	}
	return n, xid, nil
}

// Whether a snapshot older than the last fold (xid $1) is still taken in
// this database: its versions of the counter rows cannot be pruned yet, so
// folding again would only add more beside them. A snapshot is as old as
// its xmin; pg_stat_activity shows those of the console's own role.
const olderSnapshot = `
SELECT coalesce(max(age(backend_xmin)), 0) >= pg_snapshot_xmax(pg_current_snapshot())::text::bigint - $1
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL`

// maxFoldWait is how many turns in a row the folder waits for old
// snapshots to end before it folds anyway: counts never lag more.
const maxFoldWait = 20

// RunFolder folds the deltas into the counters every FoldEvery until ctx
// ends; of all the consoles, one folds at a time (the others skip their
// turn). A turn folds chunk after chunk (foldChunk) until one comes back
// short, each its own transaction. A turn is also skipped while a
// snapshot older than the last fold is taken (the row versions it
// replaced are not yet pruned; a new fold would leave its own beside
// them), at most maxFoldWait turns in a row. Failures are logged and
// tried again; folded (nil: none) is set to the time of each turn that
// folded without failing (quarantine_counters_last_fold_timestamp_seconds,
// alert CountersNotFolding).
func RunFolder(ctx context.Context, db interface {
	beginner
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, every time.Duration, folded prometheus.Gauge, log *slog.Logger) {
	if every <= 0 {
		every = FoldEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	var last int64 // xid of this folder's last fold
	waited := 0
	chunk := foldChunk
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if last != 0 && waited < maxFoldWait {
			var older bool
			if err := db.QueryRow(ctx, olderSnapshot, last).Scan(&older); err == nil && older {
				waited++
				continue
			}
		}
		waited = 0
		err := foldTurn(ctx, db, &last, &chunk, folded)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			log.Warn("folding the counters failed; trying again", "err", err)
			failing = true
		case err == nil && failing:
			log.Info("folding the counters works again")
			failing = false
		}
	}
}

// foldTurn is one turn of RunFolder: chunks of *chunk deltas while they
// come back full and this console holds the folders' lock; last is set to
// the last fold's transaction id, and folded to now once the turn folded
// everything it found. A chunk that outlasted the statement timeout halves
// *chunk (down to minFoldChunk) for the next turn; a turn that folded
// everything doubles it back (up to foldChunk).
func foldTurn(ctx context.Context, db beginner, last *int64, chunk *int, folded prometheus.Gauge) error {
	for {
		n, xid, err := foldCounters(ctx, db, false, *chunk)
		if err != nil {
			if timedOut(ctx, err) {
				*chunk = max(*chunk/2, minFoldChunk)
			}
			return err
		}
		if xid == 0 {
			return nil // another console is folding
		}
		*last = xid
		if n < int64(*chunk) {
			*chunk = min(*chunk*2, foldChunk)
			if folded != nil {
				folded.SetToCurrentTime()
			}
			return nil
		}
	}
}

// StatusMove returns one statement that moves the dead letters targets
// selects to status to, bumps their version, and keeps the counters (the
// depth counters move from the old status to the new, the groups'
// unresolved counts follow), returning returning: columns of "moved", which
// holds id, dead_lettered_at, tenant, item_type, error_class, status,
// fingerprint, msg_id, operation_id and version as they now are, and
// old_status. targets is a SELECT of
// d.id, d.dead_lettered_at and d.status FROM dead_letters d, with the
// statement's guards, ending in FOR UPDATE OF d: the rows are locked and
// their status read as they are, so the counters move from the status
// each row really had. to is an SQL expression ('replayed', $2).
//
// Every change of a dead letter's status goes through StatusMove: a status
// changed elsewhere would leave the counters wrong
// (TestCountsExactAfterIngestAndClose).
func StatusMove(targets, to, returning string) string {
	return `WITH target AS (` + targets + `
), moved AS (
    UPDATE dead_letters d SET status = ` + to + `, version = d.version + 1, updated_at = now()
    FROM target t
    WHERE d.id = t.id AND d.dead_lettered_at = t.dead_lettered_at
      AND d.status = t.status -- the row as it was locked
    RETURNING d.id, d.dead_lettered_at, d.tenant, d.item_type, d.error_class, d.status, d.fingerprint,
              d.msg_id, d.operation_id, d.version, t.status AS old_status
), counted AS (
    INSERT INTO dead_letter_counts AS c (tenant, item_type, error_class, status, n)
    SELECT tenant, item_type, error_class, status, sum(dn)::bigint FROM (
        SELECT tenant, item_type, error_class, old_status AS status, -1 AS dn FROM moved
        UNION ALL
        SELECT tenant, item_type, error_class, status, 1 FROM moved
    ) x
    GROUP BY 1, 2, 3, 4 HAVING sum(dn) <> 0 ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant, item_type, error_class, status) DO UPDATE SET n = c.n + excluded.n
    RETURNING xmax = 0 AS created
), grouped AS (
    INSERT INTO dead_letter_groups AS g (tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id, sample_at)
    SELECT tenant, fingerprint, item_type, min(error_class), 0,
           sum(dead_letter_unresolved(status)::int - dead_letter_unresolved(old_status)::int),
           min(dead_lettered_at), max(dead_lettered_at), max(id), max(dead_lettered_at)
    FROM moved GROUP BY 1, 2, 3
    HAVING sum(dead_letter_unresolved(status)::int - dead_letter_unresolved(old_status)::int) <> 0
    ORDER BY 1, 2, 3
    ON CONFLICT (tenant, fingerprint, item_type) DO UPDATE SET unresolved = g.unresolved + excluded.unresolved
), announce AS (
    SELECT count(pg_notify('` + CountersChannel + `', '')) AS n FROM (SELECT 1 FROM counted WHERE created LIMIT 1) x
)
SELECT ` + returning + ` FROM moved, announce`
}

// departure is how many dead letters of one tenant, item type, class,
// status and error group left the table.
type departure struct {
	tenant, itemType, errorClass, status, fingerprint string
	n                                                 int64
}

// Removals subtract what left from the depth counters and the groups (n
// and unresolved), one upsert per touched row, keys in order.
const applyDepartures = `
WITH gone AS (
    SELECT * FROM unnest(@tenant::text[], @item_type::text[], @error_class::text[], @status::text[], @fingerprint::text[], @n::bigint[])
        AS u(tenant, item_type, error_class, status, fingerprint, n)
), counted AS (
    INSERT INTO dead_letter_counts AS c (tenant, item_type, error_class, status, n)
    SELECT tenant, item_type, error_class, status, -sum(n) FROM gone GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant, item_type, error_class, status) DO UPDATE SET n = c.n + excluded.n
)
INSERT INTO dead_letter_groups AS g (tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id, sample_at)
SELECT tenant, fingerprint, item_type, min(error_class), -sum(n), -coalesce(sum(n) FILTER (WHERE dead_letter_unresolved(status)), 0),
       now(), now(), 0, now()
FROM gone GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
ON CONFLICT (tenant, fingerprint, item_type) DO UPDATE SET
    n = g.n + excluded.n,
    unresolved = g.unresolved + excluded.unresolved`

// subtract applies ds (dead letters removed in tx) to the counters.
func subtract(ctx context.Context, tx pgx.Tx, ds []departure) error {
	if len(ds) == 0 {
		return nil
	}
	n := len(ds)
	args := pgx.NamedArgs{}
	cols := [5][]string{make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)}
	counts := make([]int64, n)
	for i, d := range ds {
		cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i], counts[i] = d.tenant, d.itemType, d.errorClass, d.status, d.fingerprint, d.n
	}
	args["tenant"], args["item_type"], args["error_class"], args["status"], args["fingerprint"], args["n"] =
		cols[0], cols[1], cols[2], cols[3], cols[4], counts
	if _, err := tx.Exec(ctx, applyDepartures, args); err != nil {
		return fmt.Errorf("subtract from the counters: %w", err)
	}
	return nil
}

// CountArrivals records the dead letters of source stream with ids above
// afterID, written in tx by COPY (which no statement of this package
// wraps), as new for the counters (deltas that FoldCounters folds), as the
// ingester does for its own rows, and returns how many it
// recorded. Fill uses it: ids only grow, and its
// rows name a stream of their own, so these are exactly the rows it wrote.
func CountArrivals(ctx context.Context, tx pgx.Tx, afterID int64, stream string) (int64, error) {
	var n int64
	err := tx.QueryRow(ctx, `WITH ins AS (
    SELECT id, tenant, item_type, error_class, status, fingerprint, dead_lettered_at FROM dead_letters
    WHERE id > $1 AND source_stream = $2
), `+arrivalDeltas+`
SELECT count(*), (SELECT n FROM announce) FROM ins`, afterID, stream).Scan(&n, new(int64))
	if err != nil {
		return 0, fmt.Errorf("count arrivals: %w", err)
	}
	return n, nil
}

// Trimming: minute arrivals older than two days (the dashboard reads the
// last 24 hours) and hour arrivals (by type and class, and by tenant) older
// than the longest chart span, a bounded number at a time.
const (
	trimMinutes = `DELETE FROM dead_letter_arrivals_minute WHERE (tenant, minute) IN (
    SELECT tenant, minute FROM dead_letter_arrivals_minute WHERE minute < $1 LIMIT $2)`
	trimHours = `DELETE FROM dead_letter_arrivals WHERE (tenant, hour, item_type, error_class) IN (
    SELECT tenant, hour, item_type, error_class FROM dead_letter_arrivals WHERE hour < $1 LIMIT $2)`
	trimTenantHours = `DELETE FROM dead_letter_arrivals_tenant_hour WHERE (tenant, hour) IN (
    SELECT tenant, hour FROM dead_letter_arrivals_tenant_hour WHERE hour < $1 LIMIT $2)`
)

// ArrivalsKept are how long arrival counters are kept: minutes for the
// rolling last hour and day, hours for the longest dashboard chart.
const (
	MinuteArrivalsKept = 48 * time.Hour
	HourArrivalsKept   = 32 * 24 * time.Hour
)

// execer runs a statement: a pool, a connection or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// trimArrivals removes arrival counters older than they are read, batch
// rows of each table per statement and at most maxRuns statements per
// table, and returns how many it removed. A table keeps being trimmed
// while its statements remove full batches: arrivals that make more rows
// in a keeper's interval than one batch (many tenants, a producer's many
// item types) are trimmed as fast as they are made, up to
// batch × maxRuns rows a pass (a million by default).
func trimArrivals(ctx context.Context, db execer, now time.Time, batch, maxRuns int) (int64, error) {
	batch, maxRuns = max(batch, 1), max(maxRuns, 1)
	var removed int64
	for _, t := range []struct {
		what, sql string
		before    time.Time
	}{
		{"minute arrivals", trimMinutes, now.Add(-MinuteArrivalsKept)},
		{"hour arrivals", trimHours, now.Add(-HourArrivalsKept)},
		{"tenant hour arrivals", trimTenantHours, now.Add(-HourArrivalsKept)},
	} {
		for range maxRuns {
			tag, err := db.Exec(ctx, t.sql, t.before, batch)
			if err != nil {
				return removed, fmt.Errorf("trim %s: %w", t.what, err)
			}
			removed += tag.RowsAffected()
			if tag.RowsAffected() < int64(batch) {
				break
			}
		}
	}
	return removed, nil
}
