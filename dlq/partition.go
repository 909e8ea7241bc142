package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// dead_letters has one partition per UTC day of dead_lettered_at, named
// dead_letters_pYYYYMMDD (migration 0016). The console makes them ahead
// (Keeper), and on demand when a dead letter arrives for a day without one
// (Store.Insert); retention empties and drops past days. The runtime role
// does this only through the owner's functions, which check their
// arguments.

// Day is the UTC day a partition holds: 00:00 UTC of t's day.
func Day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// PartitionName is the name of the partition holding t's UTC day.
func PartitionName(t time.Time) string { return "dead_letters_p" + Day(t).Format("20060102") }

// Partition is one partition of dead_letters.
type Partition struct {
	Name string
	// Day is the UTC day it holds, from Day to Day + 24 h.
	Day time.Time
	// MinID and MaxID are its lowest and highest id when it was read; 0
	// when it held no row.
	MinID, MaxID int64
}

// End is where the partition's range ends (excluded).
func (p Partition) End() time.Time { return p.Day.Add(24 * time.Hour) }

// maxPartitionDays is how many days one call of the making function takes.
const maxPartitionDays = 400

// EnsurePartitions makes the partitions of the UTC days of times that have
// none. Days before 2000 or more than 400 days ahead are refused (an
// invalid-parameter PostgreSQL error).
func (s *Store) EnsurePartitions(ctx context.Context, times []time.Time) error {
	seen := map[time.Time]bool{}
	var days []time.Time
	for _, t := range times {
		if d := Day(t); !t.IsZero() && !seen[d] {
			seen[d] = true
			days = append(days, d)
		}
	}
	slices.SortFunc(days, func(a, b time.Time) int { return a.Compare(b) })
	for chunk := range slices.Chunk(days, maxPartitionDays) {
		cctx, cancel := s.within(ctx)
		_, err := s.pool.Exec(cctx, `SELECT quarantine_dead_letter_partitions($1)`, chunk)
		cancel()
		if err != nil {
			return fmt.Errorf("make partitions: %w", err)
		}
	}
	return nil
}

// noPartition reports whether err is PostgreSQL finding no partition of
// dead_letters for a row. It reads the error's fields, not its text, which
// the server words in its lc_messages language: the routing error is a
// check violation (23514) naming the partitioned table and no constraint,
// where a CHECK constraint's names the constraint (and the partition).
func noPartition(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && pgErr.TableName == "dead_letters" && pgErr.ConstraintName == ""
}

// dayPartitions lists the partitions of dead_letters the console makes,
// one per day: each one's name (relname) and the start of its day (lo,
// midnight UTC), read from its name, dead_letters_pYYYYMMDD. A name that
// says no day (attached by hand, dead_letters_p20240231 say) is not one
// of them: to_date refused it, and every query of the keeper, the
// counters and the sweep failed, pass after pass. So the day is counted
// from the month's first (which to_date takes for any month the pattern
// lets through, and is asked for no other), and the name must be that
// day's; its rows are still
// dead_letters' own, and retention's batches of rows reach them. Nothing
// here depends on the session's DateStyle or TimeZone.
const dayPartitions = `
SELECT c.relname, b.day::timestamp AT TIME ZONE 'UTC' AS lo
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
CROSS JOIN LATERAL (SELECT CASE WHEN c.relname ~ '^dead_letters_p[1-9][0-9]{3}(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])$'
    THEN to_date(substr(c.relname, 15, 6) || '01', 'YYYYMMDD') + (substr(c.relname, 21, 2)::int - 1) END AS day) b
WHERE i.inhparent = 'dead_letters'::regclass AND c.relname = 'dead_letters_p' || to_char(b.day, 'YYYYMMDD')`

// The partitions and the ids each holds: min and max by the primary key
// (two index probes each, the day found by pruning).
const selectPartitions = `
SELECT p.relname, p.lo,
       coalesce((SELECT min(d.id) FROM dead_letters d WHERE d.dead_lettered_at >= p.lo AND d.dead_lettered_at < p.lo + interval '24 hours'), 0),
       coalesce((SELECT max(d.id) FROM dead_letters d WHERE d.dead_lettered_at >= p.lo AND d.dead_lettered_at < p.lo + interval '24 hours'), 0)
FROM (` + dayPartitions + `) p
ORDER BY p.relname`

func scanPartition(row pgx.CollectableRow) (Partition, error) {
	var p Partition
	err := row.Scan(&p.Name, &p.Day, &p.MinID, &p.MaxID)
	p.Day = p.Day.UTC()
	return p, err
}

// Partitions returns the partitions of dead_letters, oldest first.
func (s *Store) Partitions(ctx context.Context) ([]Partition, error) {
	return listPartitions(ctx, s.pool)
}

// queryer is a pool, a connection or a transaction, to query through.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// listPartitions lists the partitions through a pool, a connection or a
// transaction.
func listPartitions(ctx context.Context, db queryer) ([]Partition, error) {
	rows, err := db.Query(ctx, selectPartitions)
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	ps, err := pgx.CollectRows(rows, scanPartition)
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	return ps, nil
}

// Key is where a dead letter is stored: its id and dead_lettered_at, the
// primary key of the partitioned table, and its tenant.
type Key struct {
	ID     int64
	At     time.Time
	Tenant string
}

// The whole range of dead_lettered_at, for lookups by id alone.
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
)

// recentIDsSpan is where an id newer than every partition's highest (a row
// stored since the snapshot) is looked for first: the partitions of the
// last two days and later.
const recentIDsSpan = 48 * time.Hour

// span returns the range of dead_lettered_at that holds id as far as the
// partitions' id ranges say (one or a few adjacent days), and whether it is
// narrower than the whole table. It is a hint: a dead letter stored for an
// old day after the snapshot is outside it, so a lookup that finds nothing
// in the span looks again everywhere.
func (s *CountersSnapshot) span(id int64) (lo, hi time.Time, narrow bool) {
	var top int64
	for _, p := range s.Partitions {
		top = max(top, p.MaxID)
		if p.MinID == 0 || id < p.MinID || id > p.MaxID {
			continue
		}
		if !narrow || p.Day.Before(lo) {
			lo = p.Day
		}
		if !narrow || p.End().After(hi) {
			hi = p.End()
		}
		narrow = true
	}
	if id > top {
		return Day(s.At.Add(-recentIDsSpan)), maxTime, true
	}
	if !narrow {
		return minTime, maxTime, false
	}
	return lo, hi, true
}

// Look up dead letters by id: first in the span the partition map gives
// each id, then everywhere for those not found there.
const selectKeys = `SELECT d.id, d.dead_lettered_at, d.tenant
FROM unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[]) AS k(id, lo, hi)
JOIN dead_letters d ON d.id = k.id AND d.dead_lettered_at >= k.lo AND d.dead_lettered_at < k.hi`

// Keys returns the keys of those of ids that name a dead letter, each once
// (UniqueIDs), in no particular order (ids of nothing are left out).
func (s *Store) Keys(ctx context.Context, ids []int64) ([]Key, error) {
	ids = UniqueIDs(ids)
	snap, err := s.counters.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("find dead letters: %w", err)
	}
	lo, hi := make([]time.Time, len(ids)), make([]time.Time, len(ids))
	for i, id := range ids {
		lo[i], hi[i], _ = snap.span(id)
	}
	keys, err := s.keysIn(ctx, ids, lo, hi)
	if err != nil || len(keys) == len(ids) {
		return keys, err
	}
	found := make(map[int64]bool, len(keys))
	for _, k := range keys {
		found[k.ID] = true
	}
	var rest []int64
	for _, id := range ids {
		if !found[id] {
			rest = append(rest, id)
		}
	}
	lo, hi = make([]time.Time, len(rest)), make([]time.Time, len(rest))
	for i := range rest {
		lo[i], hi[i] = minTime, maxTime
	}
	more, err := s.keysIn(ctx, rest, lo, hi)
	if err != nil {
		return nil, err
	}
	return append(keys, more...), nil
}

func (s *Store) keysIn(ctx context.Context, ids []int64, lo, hi []time.Time) ([]Key, error) {
	rows, err := s.pool.Query(ctx, selectKeys, ids, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("find dead letters: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Key, error) {
		var k Key
		err := row.Scan(&k.ID, &k.At, &k.Tenant)
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("find dead letters: %w", err)
	}
	return keys, nil
}

// KeyArrays returns the ids and times of keys as two arrays, for
// unnest($1::bigint[], $2::timestamptz[]).
func KeyArrays(keys []Key) ([]int64, []time.Time) {
	ids, ats := make([]int64, len(keys)), make([]time.Time, len(keys))
	for i, k := range keys {
		ids[i], ats[i] = k.ID, k.At
	}
	return ids, ats
}
