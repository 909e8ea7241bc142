package dlq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// CountersSnapshot is what the counter tables and the partitions said at
// one moment: which tenants have dead letters (the scope of people whose
// role covers every tenant), which item types and classes each has (the
// filter choices), the counter rows the list plans with, and the id range
// of every partition (where to look for a dead letter by id). Pages read
// it instead of the tables; it never decides what a page shows, only where
// to look and in which tenants: counts shown as exact are read with the
// page (Store.ListDeadLetters, Store.Dashboard).
type CountersSnapshot struct {
	At         time.Time
	Combos     []DepthCount // counter rows, in key order (n is 0 until a fold counts a new one)
	Partitions []Partition  // oldest first
	tenants    []string
}

// Tenants returns the tenants that have dead letters, sorted.
func (s *CountersSnapshot) Tenants() []string { return slices.Clone(s.tenants) }

// Facets returns the item types and error classes stored in tenants,
// sorted: every item type up to ItemTypeChoices, else the ItemTypeChoices
// holding the most dead letters (Facets.ItemTypeCount says how many there
// are).
func (s *CountersSnapshot) Facets(tenants []string) Facets {
	types, classes := map[string]int64{}, map[string]bool{}
	for _, c := range s.Combos {
		if slices.Contains(tenants, c.Tenant) {
			types[c.ItemType] += c.N
			classes[string(c.ErrorClass)] = true
		}
	}
	f := Facets{ItemTypes: mostFirst(types, ItemTypeChoices), ItemTypeCount: len(types), ErrorClasses: sortedKeys(classes)}
	slices.Sort(f.ItemTypes)
	return f
}

// mostFirst returns the keys of m with the largest values, at most n of
// them, the largest first (of equal ones, the first by name).
func mostFirst(m map[string]int64, n int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int {
		if m[a] != m[b] {
			return cmp.Compare(m[b], m[a])
		}
		return strings.Compare(a, b)
	})
	return out[:min(n, len(out))]
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Counters keeps a process's CountersSnapshot. Run keeps it fresh: it
// listens on CountersChannel (a new tenant, item type, class or status
// anywhere is announced when its first dead letter commits; partitions
// made or dropped too), and reads again after an announcement (at most
// once a second; the first request after one reads it if Run has not yet),
// and every RefreshEvery in any case (the counts the list plans with
// drift). Without Run, Snapshot reads again when the snapshot is older than
// a second.
type Counters struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	snap    atomic.Pointer[CountersSnapshot]
	running atomic.Bool
	dirty   atomic.Bool // an announcement came since the last read
	mu      sync.Mutex  // one read at a time
}

// RefreshEvery is how often a running Counters reads again without an
// announcement.
const RefreshEvery = 10 * time.Second

// minRefresh is the shortest time between two reads.
const minRefresh = time.Second

// NewCounters returns an empty Counters on pool; the first Snapshot reads.
func NewCounters(pool *pgxpool.Pool, log *slog.Logger) *Counters {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Counters{pool: pool, log: log}
}

// Every counter row, with n 0 too: a combination's row exists from its
// first dead letter's commit (the fold counts it shortly after).
const selectSnapshotCombos = `SELECT tenant, item_type, error_class, status, n FROM dead_letter_counts
ORDER BY tenant, item_type, error_class, status`

// Snapshot returns the current snapshot, reading one first when there is
// none yet, when something was announced since it was read, or (when Run
// is not running) when it is older than a second. A request that finds a
// read under way (another request's, Run's) does not wait for it: it
// returns the snapshot there is, and only a request that finds none waits.
// The read looks at every partition (their id ranges), so it waits for
// whatever holds one exclusively for a moment (a day's TRUNCATE to its
// commit, the drop of an empty day); one request waiting so is enough,
// the others go on with what the snapshot said a moment ago, which only
// tells them where to look.
func (c *Counters) Snapshot(ctx context.Context) (*CountersSnapshot, error) {
	s := c.snap.Load()
	if s != nil && !c.dirty.Load() && (c.running.Load() || time.Since(s.At) < minRefresh) {
		return s, nil
	}
	if s == nil {
		return c.Refresh(ctx)
	}
	if !c.mu.TryLock() {
		return s, nil
	}
	defer c.mu.Unlock()
	return c.refresh(ctx)
}

// Refresh reads the counters and partitions now, after any read under way.
func (c *Counters) Refresh(ctx context.Context) (*CountersSnapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refresh(ctx)
}

// refresh reads the counters and partitions; c.mu is held.
func (c *Counters) refresh(ctx context.Context) (*CountersSnapshot, error) {
	c.dirty.Store(false) // an announcement from here on is read again
	s := &CountersSnapshot{At: time.Now()}
	b := &pgx.Batch{}
	b.Queue(selectSnapshotCombos).Query(func(rows pgx.Rows) error {
		var err error
		s.Combos, err = pgx.CollectRows(rows, scanDepth)
		return err
	})
	b.Queue(selectPartitions).Query(func(rows pgx.Rows) error {
		var err error
		s.Partitions, err = pgx.CollectRows(rows, scanPartition)
		return err
	})
	if err := c.pool.SendBatch(ctx, b).Close(); err != nil {
		c.dirty.Store(true)
		return nil, fmt.Errorf("read counters snapshot: %w", err)
	}
	for _, cb := range s.Combos {
		if n := len(s.tenants); n == 0 || s.tenants[n-1] != cb.Tenant {
			s.tenants = append(s.tenants, cb.Tenant)
		}
	}
	c.snap.Store(s)
	return s, nil
}

// Run keeps the snapshot fresh until ctx ends (see Counters). It holds one
// connection of the pool to listen on, and takes another when that one
// fails.
func (c *Counters) Run(ctx context.Context) {
	c.running.Store(true)
	defer c.running.Store(false)
	for ctx.Err() == nil {
		err := c.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("counters snapshot: listening failed; reading every second until it works again", "err", err)
		c.refreshLogged(ctx)
		select {
		case <-time.After(minRefresh):
		case <-ctx.Done():
		}
	}
}

func (c *Counters) listen(ctx context.Context) error {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+CountersChannel); err != nil {
		return err
	}
	defer func() {
		// A connection going back to the pool must not keep listening.
		uctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, "UNLISTEN *"); err != nil {
			conn.Conn().Close(uctx) //nolint:errcheck // dropped anyway
		}
	}()
	c.refreshLogged(ctx) // what changed before we listened
	last := time.Now()
	for {
		timeout := RefreshEvery
		if c.dirty.Load() {
			timeout = max(minRefresh-time.Since(last), time.Millisecond) // read what is pending soon
		}
		wctx, cancel := context.WithTimeout(ctx, timeout)
		_, err := conn.Conn().WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			return err
		case err == nil:
			c.dirty.Store(true) // requests read it themselves until Run does
			if time.Since(last) < minRefresh {
				continue // announcements in a burst: one read for all of them
			}
		}
		if err == nil || c.dirty.Load() || time.Since(last) >= RefreshEvery {
			c.refreshLogged(ctx)
			last = time.Now()
		}
	}
}

// Announce tells every console (this one too) that the counters or the
// partitions changed in a way a snapshot must see, when tx commits.
func Announce(ctx context.Context, db execer) error {
	if _, err := db.Exec(ctx, `SELECT pg_notify('`+CountersChannel+`', '')`); err != nil {
		return fmt.Errorf("announce a change of the counters: %w", err)
	}
	return nil
}

func (c *Counters) refreshLogged(ctx context.Context) {
	if _, err := c.Refresh(ctx); err != nil && ctx.Err() == nil {
		c.log.Warn("counters snapshot", "err", err)
	}
}
