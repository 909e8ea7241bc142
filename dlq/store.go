package dlq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"
)

// Store writes and reads dead letters in PostgreSQL.
type Store struct {
	pool     *pgxpool.Pool
	counters *Counters
	// windowRows is how many dead letters a text search's first window
	// holds (0: textWindowRows); tests make it small.
	windowRows int64
	// now is this process's clock (nil: time.Now); tests set it.
	now func() time.Time
	// deadline, when not 0, is how long the store waits for one statement
	// of its writes, or for a connection of its pool, before it gives up
	// on it (within): the ingester's store (NewIngester) has one a little
	// past the server's statement_timeout, so that a connection that hangs
	// without an error fails the attempt instead of holding its batch.
	deadline time.Duration
}

// withDeadline returns a copy of s (the same pool and counters) that gives
// up on a statement of its writes, or on the wait for a connection, after
// d (see within).
func (s *Store) withDeadline(d time.Duration) *Store {
	c := *s
	c.deadline = d
	return &c
}

// within returns ctx bounded by the store's deadline for ONE statement, or
// for the wait for a connection of the pool (unbounded when it has none):
// a fresh deadline from now at each call. PostgreSQL answers a statement
// that runs long with its own statement_timeout error first (Busy); only a
// connection that never answers reaches the deadline, whose error
// (context.DeadlineExceeded; pgx closes the connection) is Unreachable.
// Never a whole transaction's: one of statements that each end inside the
// server's timeout may take longer than the deadline, and PostgreSQL
// answered every one of them (see inTx).
func (s *Store) within(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.deadline <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.deadline)
}

// inTx runs fn in a transaction on a connection of the pool, as
// pgx.BeginFunc does, with the store's deadline (within) on each step
// apart, never on the transaction as a whole: the wait for a connection
// (the pool may be shared, the Jobs pool), BEGIN, each statement fn runs
// on tx (boundedTx), COMMIT or ROLLBACK. A transaction of statements that
// each take a little under statement_timeout ends as PostgreSQL ends it
// (stored, or Busy when one of them runs past it: narrowed down, its slow
// record deferred), however long it takes in all; only a step that gets
// no answer is given up (Unreachable). fn must run its statements on tx
// with the context inTx was given: tx bounds each one.
func (s *Store) inTx(ctx context.Context, fn func(tx boundedTx) error) error {
	actx, cancel := s.within(ctx)
	conn, err := s.pool.Acquire(actx)
	cancel()
	if err != nil {
		return fmt.Errorf("wait for a connection to PostgreSQL: %w", err)
	}
	defer conn.Release()
	return pgx.BeginFunc(ctx, beginWithin{db: conn, s: s}, func(tx pgx.Tx) error { return fn(tx.(boundedTx)) })
}

// beginWithin begins transactions on db (BEGIN within the store's
// deadline) whose statements are each bounded by it (boundedTx).
type beginWithin struct {
	db beginner
	s  *Store
}

func (b beginWithin) Begin(ctx context.Context) (pgx.Tx, error) {
	ctx, cancel := b.s.within(ctx)
	defer cancel()
	tx, err := b.db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return boundedTx{Tx: tx, s: b.s}, nil
}

// boundedTx is a transaction of inTx: each statement run on it, COMMIT
// and ROLLBACK included, gets a deadline of its own from the context it
// is given (Store.within); the rows of a query keep theirs until they are
// closed. A statement sent on the connection another way (Conn, a COPY
// of PgConn) takes its deadline from within.
type boundedTx struct {
	pgx.Tx
	s *Store
}

// within bounds one statement sent on the transaction's connection
// another way than its methods (Store.within).
func (t boundedTx) within(ctx context.Context) (context.Context, context.CancelFunc) {
	return t.s.within(ctx)
}

func (t boundedTx) Begin(ctx context.Context) (pgx.Tx, error) {
	return beginWithin{db: t.Tx, s: t.s}.Begin(ctx)
}

func (t boundedTx) Commit(ctx context.Context) error {
	ctx, cancel := t.within(ctx)
	defer cancel()
	return t.Tx.Commit(ctx)
}

func (t boundedTx) Rollback(ctx context.Context) error {
	ctx, cancel := t.within(ctx)
	defer cancel()
	return t.Tx.Rollback(ctx)
}

func (t boundedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, cancel := t.within(ctx)
	defer cancel()
	return t.Tx.Exec(ctx, sql, args...)
}

func (t boundedTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	ctx, cancel := t.within(ctx)
	defer cancel()
	return t.Tx.Prepare(ctx, name, sql)
}

func (t boundedTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	ctx, cancel := t.within(ctx)
	defer cancel()
	return t.Tx.CopyFrom(ctx, table, columns, src)
}

func (t boundedTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	ctx, cancel := t.within(ctx)
	return boundedBatch{BatchResults: t.Tx.SendBatch(ctx, b), cancel: cancel}
}

func (t boundedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, cancel := t.within(ctx)
	rows, err := t.Tx.Query(ctx, sql, args...)
	if err != nil {
		cancel()
		return rows, err
	}
	return boundedRows{Rows: rows, cancel: cancel}, nil
}

func (t boundedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ctx, cancel := t.within(ctx)
	return boundedRow{row: t.Tx.QueryRow(ctx, sql, args...), cancel: cancel}
}

// boundedRows are the rows of a boundedTx query: its deadline ends with
// them.
type boundedRows struct {
	pgx.Rows
	cancel context.CancelFunc
}

func (r boundedRows) Close() {
	r.Rows.Close()
	r.cancel()
}

func (r boundedRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.cancel() // read to the end: pgx closed them
	return false
}

// boundedRow is the row of a boundedTx QueryRow: its deadline ends once
// it is scanned.
type boundedRow struct {
	row    pgx.Row
	cancel context.CancelFunc
}

func (r boundedRow) Scan(dest ...any) error {
	defer r.cancel()
	return r.row.Scan(dest...)
}

// boundedBatch is the results of a boundedTx batch: its deadline ends
// once they are closed.
type boundedBatch struct {
	pgx.BatchResults
	cancel context.CancelFunc
}

func (b boundedBatch) Close() error {
	defer b.cancel()
	return b.BatchResults.Close()
}

func (s *Store) clock() time.Time {
	if s.now == nil {
		return time.Now()
	}
	return s.now()
}

// NewStore returns a Store on pool, with a Counters snapshot of its own
// (see Store.Counters).
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool, counters: NewCounters(pool, nil)} }

// NewStoreSharing returns a Store on pool that plans with the snapshot of
// counters (one per process, kept fresh by its Run).
func NewStoreSharing(pool *pgxpool.Pool, counters *Counters) *Store {
	return &Store{pool: pool, counters: counters}
}

// Counters is the snapshot of the counters the store plans with.
func (s *Store) Counters() *Counters { return s.counters }

// Inserted describes a row a batch insert created (duplicates are not
// reported).
type Inserted struct {
	Tenant     string
	ItemType   string
	ErrorClass ErrorClass
	Malformed  bool
	// StoredAt is when JetStream stored the delivery the row was made
	// from, by the NATS server's clock as it gave it (Record.storedAt,
	// not the dead-lettered time checkStoredAt may have moved); zero
	// when unknown.
	StoredAt time.Time
}

// InsertResult is what Insert did with a batch.
type InsertResult struct {
	// Inserted are the rows created, in the parsed or the raw form;
	// records already stored (redeliveries) are not in it.
	Inserted []Inserted
	// Raw are the records PostgreSQL refused in their parsed form, stored
	// in their raw form instead (see RawForm); with an error, those whose
	// raw form was stored before it (a later insert that skips what is
	// stored may not report them again, or may: count each index once).
	Raw []Refused
	// Unstorable are the records not stored at all: PostgreSQL refused
	// their raw form too. Their messages must not be acked.
	Unstorable []Refused
	// Statements counts the attempts to store part of the batch (each one
	// transaction, see insert): 1 when nothing was refused, a few more per
	// refused record (isolation by halves).
	Statements int
}

// Refused is a record of the batch (its index) PostgreSQL refused, and why.
type Refused struct {
	Index int
	Err   error
}

// Insert stores recs, one transaction (one COPY) for the lot when nothing
// is refused; rows whose source key exists are skipped. Records that say they are the
// replay of a dead letter are linked to it first, or flagged (linkReplays). When PostgreSQL refuses the
// statement for any reason but being unreachable (see Unreachable), the
// batch is split in halves, and each half again, until every refused record
// is alone: one bad record costs its batch about 2·log2(n) statements, never
// the others' rows. A statement PostgreSQL could not finish for a reason
// not the data's (Busy: a statement timeout, memory, a lock) is not a
// refusal: Insert ends with the error, like an unreachable database, and
// the caller retries (the ingester: storeBatch). A refused record is stored in its raw form (RawForm),
// which holds nothing PostgreSQL can refuse but an advisory's give-up; the
// raw forms are inserted the same way, an advisory's refused raw form is
// tried once more without its give-up (insertBare), and a record whose raw
// form is refused too is reported in Unstorable. An unreachable database ends Insert with the error and the
// result so far: the caller retries the whole batch later (what was stored
// is skipped then).
func (s *Store) Insert(ctx context.Context, recs []Record) (InsertResult, error) {
	var res InsertResult
	if err := s.linkReplays(ctx, recs); err != nil {
		return res, err
	}
	confirmReplayContexts(recs) // an advisory's operation id only from a confirmed replay
	refused, err := s.isolate(ctx, recs, 0, &res, nil)
	if err != nil || len(refused) == 0 {
		return res, err
	}
	raw := make([]Record, len(refused))
	for i, rf := range refused {
		raw[i] = RawForm(recs[rf.Index], rf.Err)
	}
	var stored []int
	unstorable, err := s.isolate(ctx, raw, 0, &res, &stored)
	if err == nil {
		unstorable, err = s.insertBare(ctx, recs, refused, unstorable, &res, &stored)
	}
	if err != nil {
		// The raw forms stored before the error are reported: a retry
		// that skips what is stored (insert) would not report them.
		for _, i := range stored {
			res.Raw = append(res.Raw, refused[i])
		}
		return res, err
	}
	bad := map[int]bool{}
	for _, u := range unstorable {
		bad[u.Index] = true
		res.Unstorable = append(res.Unstorable, Refused{Index: refused[u.Index].Index, Err: u.Err})
	}
	for i, rf := range refused {
		if !bad[i] {
			res.Raw = append(res.Raw, rf)
		}
	}
	return res, nil
}

// insertBare stores the bare raw form (bareRawForm: without the give-up)
// of each advisory's record whose raw form PostgreSQL refused
// (unstorable, indexes of refused, itself indexes of recs), and returns
// the raw forms refused still: those of other records, and those whose
// bare raw form is refused too. The indexes (of refused) of those it
// stores go to stored, also when it ends with an error.
func (s *Store) insertBare(ctx context.Context, recs []Record, refused, unstorable []Refused, res *InsertResult, stored *[]int) ([]Refused, error) {
	var left []Refused
	var bare []Record
	var of []int // index in refused of each bare form
	for _, u := range unstorable {
		r := recs[refused[u.Index].Index]
		if !r.hasGiveUp() {
			left = append(left, u)
			continue
		}
		bare = append(bare, bareRawForm(r, refused[u.Index].Err))
		of = append(of, u.Index)
	}
	var got []int
	again, err := s.isolate(ctx, bare, 0, res, &got)
	for _, i := range got {
		*stored = append(*stored, of[i])
	}
	for _, u := range again {
		left = append(left, Refused{Index: of[u.Index], Err: u.Err})
	}
	return left, err
}

// isolate inserts recs (whose first is recs[base] of the caller's batch,
// for the indexes it reports) and returns the records PostgreSQL refused
// alone; the indexes of those stored go to stored when it is not nil,
// also when it ends with an error.
func (s *Store) isolate(ctx context.Context, recs []Record, base int, res *InsertResult, stored *[]int) ([]Refused, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	res.Statements++
	in, err := s.insert(ctx, recs)
	switch {
	case err == nil:
		res.Inserted = append(res.Inserted, in...)
		for i := range recs {
			if stored == nil {
				break
			}
			*stored = append(*stored, base+i)
		}
		return nil, nil
	case Unreachable(err) || Busy(err) || LostRace(err) || ctx.Err() != nil:
		return nil, err // not the data's fault: the caller tries again
	case len(recs) == 1:
		return []Refused{{Index: base, Err: err}}, nil
	}
	mid := len(recs) / 2
	left, err := s.isolate(ctx, recs[:mid], base, res, stored)
	if err != nil {
		return left, err
	}
	right, err := s.isolate(ctx, recs[mid:], base+mid, res, stored)
	return append(left, right...), err
}

// insert stores recs in one transaction (copyBatch). Redeliveries are
// rare: the batch is first stored as it is, and only when the source key's
// unique index refuses it is it stored again without the records already
// stored, as often as the index refuses it with fewer records each time
// (another ingester storing the same redelivery meanwhile). A batch with a
// dead letter older than purgeHorizon goes without them from the start:
// retention may have removed one, and the index would let it in again.
// This process's clock only guesses which batch that is; the database's,
// by which retention judges, decides (copyBatch): a batch the guess let
// through goes again, looking, when this clock lags the database's. A
// day without a partition (a dead letter stored long ago, or the keeper
// behind) gets one and the batch goes again, up to partitionAttempts
// times: the keeper drops an empty past day, and may drop the one just
// made before the batch comes back to it. A partition its maker could not
// make in time, or a day dropped again each time, is not the data's
// fault: the error is Busy (partitionNotMade, errPartitionDropped), never
// a refusal the caller would isolate and store in raw form.
func (s *Store) insert(ctx context.Context, recs []Record) ([]Inserted, error) {
	now := s.clock()
	rows := copyRows(recs, now)
	partitioned, unstoredOnly, skipped := 0, mayBePurged(recs, now), -1
	for {
		in, n, err := s.copyBatch(ctx, rows, unstoredOnly)
		switch {
		case errors.Is(err, errMayBePurged) && !unstoredOnly:
			unstoredOnly = true
		case sourceKeyTaken(err) && n > skipped:
			// A redelivery of a stored record: skip what is stored.
			unstoredOnly, skipped = true, n
		case noPartition(err) && partitioned < partitionAttempts:
			// A day the functions refuse leaves the first error to the caller.
			deadAt := make([]time.Time, len(recs))
			for i := range recs {
				deadAt[i] = recs[i].DeadLetteredAt
			}
			if perr := s.EnsurePartitions(ctx, deadAt); perr != nil {
				return nil, partitionNotMade(err, perr)
			}
			partitioned++
		case noPartition(err):
			// Made and dropped again partitionAttempts times: the keeper's
			// doing, not the data's.
			return in, fmt.Errorf("%w: %w", errPartitionDropped, err)
		default:
			return in, err
		}
	}
}

// partitionAttempts bounds how often one insert makes the partitions of
// its days: a day the keeper drops again each time is not a race any more,
// but still not the data's fault (errPartitionDropped).
const partitionAttempts = 3

// errPartitionDropped says a day of the batch had no partition
// partitionAttempts times in a row, each made and dropped again (the
// keeper dropping an empty past day) before the batch came back to it. It
// is Busy: the batch is retried, a record failing so alone deferred, never
// taken as refused for its content.
var errPartitionDropped = errors.New("the partition of its day was made and dropped again before the insert came back to it")

// partitionNotMade is the error of an insert (err: the row routed to no
// partition) when making the partition of its day failed (perr). A maker
// that failed for a reason not the data's (Busy, Unreachable or LostRace: its ATTACH
// waited past the statement timeout behind an ANALYZE, a VACUUM, a CREATE
// INDEX CONCURRENTLY or another maker; the connection) gives its own
// error, which the caller retries or defers: the routing error alone
// would read as a check violation, a record refused for its content, and
// end as its raw and then its position form, payload gone. A day the
// functions refuse (before 2000, more than 400 days ahead: 22023) is the
// record's: the routing error, with why no partition was made.
func partitionNotMade(err, perr error) error {
	if Busy(perr) || Unreachable(perr) || LostRace(perr) {
		return fmt.Errorf("%w (for a row whose day has no partition: %v)", perr, err)
	}
	return fmt.Errorf("%w (no partition for its day: %v)", err, perr)
}

// purgeHorizon is how old a dead letter must be for retention to have
// removed it: half of minKeep, a margin. Both judge on the database's
// clock (copyBatch), so this process's clock does not count.
const purgeHorizon = minKeep / 2

// mayBePurged reports whether a record of recs was dead-lettered longer
// than purgeHorizon before now, or may have a delivery kept under another
// day (Record.mayBeKeptUnderAnotherDay), which only unstored finds
// (keptUnderADay).
func mayBePurged(recs []Record, now time.Time) bool {
	for i := range recs {
		if recs[i].DeadLetteredAt.Before(now.Add(-purgeHorizon)) || recs[i].mayBeKeptUnderAnotherDay(now) {
			return true
		}
	}
	return false
}

// sourceKeyTaken reports whether err is the source key's unique index
// refusing a row (SQLSTATE 23505): a record stored before. The primary key,
// the only other unique index of dead_letters, holds ids drawn from the
// identity sequence, which never gives one twice.
func sourceKeyTaken(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && strings.Contains(pgErr.ConstraintName, "source_key")
}

// Unreachable reports whether err says the database could not be reached or
// cannot take writes just now (the connection, the server starting or
// stopping, a full disk, too many connections, a read-only replica after a
// failover): the same statement is worth trying again as it is. A
// transaction that lost a lock race (LostRace) is not that: PostgreSQL
// answered. Any other error, with or without a SQLSTATE, may come from the
// data (unless Busy or LostRace), and Insert isolates the record that
// causes it.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	// A connection the server refused with a code (55000: the database
	// does not accept connections; 28P01: the password; 3D000: no such
	// database) is unreachable whatever the code: no record was read.
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
			"53100", "53300", // disk_full, too_many_connections
			"25006": // read_only_sql_transaction: a replica after a failover
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection_exception
	}
	var netErr net.Error
	return errors.As(err, &netErr) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, puddle.ErrClosedPool) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// LostRace reports whether err says PostgreSQL rolled the transaction back
// because it lost a race with another one: a deadlock (40P01: retention
// emptying a day, another writer of the same rows) or a serialization
// failure (40001). PostgreSQL answered, and nothing of the data is at
// fault: the same transaction is worth trying again at once, and it is no
// sign that PostgreSQL is out of reach (Unreachable) or busy (Busy).
func LostRace(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// Busy reports whether err says PostgreSQL could not finish the statement
// for a reason that is not the data's: it was cancelled or ran past
// statement_timeout (57014), the server is short of memory or other
// resources (class 53: out of memory, disk full, too many connections),
// a lock was not available (55P03, lock_timeout or NOWAIT) or an object
// is in use (55006), a system or I/O error (class 58), or an internal
// error or damage PostgreSQL found in its own storage (class XX: a
// corrupt page or TOAST index that only rows large enough to reach TOAST
// meet, so a small position form would get through where the whole row
// cannot; the damage is the server's, never the record's). The statement
// may well work later; it may also keep failing for one record (a row so
// large it always times out). Never a reason to store a record in its
// raw form. So is an insert whose day's partition was dropped again each
// time it was made (errPartitionDropped), and one that lost a lock race
// each time it was tried (errLostRaces; a single lost race is LostRace's,
// not Busy's).
func Busy(err error) bool {
	if errors.Is(err, errPartitionDropped) || errors.Is(err, errLostRaces) {
		return true
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch {
	case pgErr.Code == "57014", pgErr.Code == "55P03", pgErr.Code == "55006":
		return true
	}
	return strings.HasPrefix(pgErr.Code, "53") || strings.HasPrefix(pgErr.Code, "58") || strings.HasPrefix(pgErr.Code, "XX")
}

// DepthCount is one counter row: how many dead letters share these values.
type DepthCount struct {
	Tenant     string
	ItemType   string
	ErrorClass ErrorClass
	Status     Status
	N          int64
}

const selectDepth = `
SELECT tenant, item_type, error_class, status, n
FROM dead_letter_counts WHERE n <> 0
ORDER BY tenant, item_type, error_class, status`

// Depth returns the trigger-kept counters.
func (s *Store) Depth(ctx context.Context) ([]DepthCount, error) {
	rows, err := s.pool.Query(ctx, selectDepth)
	if err != nil {
		return nil, fmt.Errorf("read depth: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (DepthCount, error) {
		var d DepthCount
		var c, st string
		err := row.Scan(&d.Tenant, &d.ItemType, &c, &st, &d.N)
		d.ErrorClass, d.Status = ErrorClass(c), Status(st)
		return d, err
	})
}

// The lateral probe walks the partial index dead_letters_unresolved_age_idx,
// one probe per tenant, as the dashboard's does (unresolvedProbe: a NATS
// server clock running ahead made the oldest look younger by as much, and
// the alert stayed silent).
const selectOldestUnresolved = `
SELECT t.tenant, o.oldest
FROM (SELECT DISTINCT tenant FROM dead_letter_counts WHERE n > 0) t
CROSS JOIN LATERAL (
    SELECT min(f.since) AS oldest FROM (` + unresolvedProbe + `
    ) f
) o
WHERE o.oldest IS NOT NULL`

// OldestUnresolved returns, per tenant with unresolved dead letters, when
// the oldest of them was dead-lettered.
func (s *Store) OldestUnresolved(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, selectOldestUnresolved)
	if err != nil {
		return nil, fmt.Errorf("read oldest unresolved: %w", err)
	}
	out := map[string]time.Time{}
	var tenant string
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&tenant, &at}, func() error {
		out[tenant] = at
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read oldest unresolved: %w", err)
	}
	return out, nil
}

// Tenants returns the tenants that have dead letters, sorted, from the
// counters snapshot (a new tenant shows within a second).
func (s *Store) Tenants(ctx context.Context) ([]string, error) {
	snap, err := s.counters.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return snap.Tenants(), nil
}
