package dlq

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// giveWayWarnAfter is how many passes in a row the keeper's work on one
// day (dropping it empty, migration 0051; emptying it whole, migration
// 0048) may give way to a lock before it says so as a warning: once, with
// who holds dead_letters or the day then. Each give-way alone is routine
// (a report, an export, a psql session reading the table) and logged at
// INFO; the same day given way passes on end is a purge or a drop that
// never finishes, and an operator must find what keeps the table.
const giveWayWarnAfter = 3

// gaveWayAgain logs that the keeper's work what ("drop", "empty") on
// partition gave way to a lock (err) in this pass, saying msg: at INFO,
// but at WARN, once, on the giveWayWarnAfter-th pass in a row, naming the
// sessions that hold a lock on dead_letters or the partition then
// (lockHolders; best effort: the one the work gave way to may have ended).
func (k *Keeper) gaveWayAgain(ctx context.Context, conn *pgx.Conn, what, partition, msg string, err error) {
	key := what + " " + partition
	k.giveWays[key]++
	n := k.giveWays[key]
	if n != giveWayWarnAfter {
		k.log.Info(msg, "partition", partition, "passes_in_a_row", n, "err", err)
		return
	}
	k.log.Warn(fmt.Sprintf("%s; it gave way %d passes in a row: something keeps dead_letters or the day in use (see held_by)", msg, n),
		"partition", partition, "passes_in_a_row", n, "held_by", lockHolders(ctx, conn, partition), "err", err)
}

// wentThrough ends the streak of give-ways of the keeper's work what on
// partition (gaveWayAgain): it went through, or there was nothing to do.
func (k *Keeper) wentThrough(what, partition string) {
	delete(k.giveWays, what+" "+partition)
}

// selectLockHolders is who holds a lock on dead_letters or the partition
// $1 now (another session than the keeper's), the longest in a
// transaction first. The query text is the session's own role's to read
// (pg_read_all_stats for others'); without it, the rest still names them.
// A relation's oid is its database's: pg_locks shows every database's
// locks, and a database made from the same template (or restored from the
// same dump) has its dead_letters under the same oid, so only this
// database's are read.
const selectLockHolders = `SELECT l.pid, l.mode, l.relation::regclass::text, coalesce(a.application_name, ''), coalesce(a.usename::text, ''),
        coalesce(a.state, ''), a.xact_start, coalesce(left(a.query, 120), '')
    FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'relation' AND l.granted AND l.pid <> pg_backend_pid()
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.relation IN (SELECT to_regclass('public.dead_letters') UNION ALL SELECT to_regclass(format('public.%I', $1::text)))
    ORDER BY a.xact_start NULLS LAST, l.pid LIMIT 5`

// lockHolders says who holds a lock on dead_letters or partition now
// (selectLockHolders), for a warning: "" when none does, what went wrong
// when it cannot be read.
func lockHolders(ctx context.Context, conn *pgx.Conn, partition string) string {
	rows, err := conn.Query(ctx, selectLockHolders, partition)
	if err != nil {
		return "not known: " + err.Error()
	}
	var out []string
	var pid int32
	var mode, rel, app, user, state, query string
	var since *time.Time
	_, err = pgx.ForEachRow(rows, []any{&pid, &mode, &rel, &app, &user, &state, &since, &query}, func() error {
		s := fmt.Sprintf("pid %d (%s on %s; application %q, user %q, %s", pid, mode, rel, app, user, state)
		if since != nil {
			s += fmt.Sprintf(", in a transaction since %s", since.UTC().Format(time.RFC3339))
		}
		if query != "" {
			s += fmt.Sprintf(", last query %q", query)
		}
		out = append(out, s+")")
		return nil
	})
	if err != nil {
		return "not known: " + err.Error()
	}
	return strings.Join(out, "; ")
}
