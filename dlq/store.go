package dlq

import (
	"context"
	"encoding/json"
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
	Tenant         string
	ItemType       string
	ErrorClass     ErrorClass
	Malformed      bool
	DeadLetteredAt time.Time
}

// The batch is passed as one array per column and unnested, so a thousand
// rows cost one statement (flags as one comma-separated text per row: a
// per-row subquery, as for malformed_reasons, costs measurably); a source
// key seen before (redelivery) is skipped (the unique index leads with
// dead_lettered_at, which the key includes: see migration 0008): the batch
// is first inserted as it is (insertBatch), and only when the source key's
// unique index refuses it is it inserted again with ON CONFLICT DO NOTHING
// (insertBatchSkipping). Redeliveries are rare, and the speculative
// insertion ON CONFLICT makes of every row cost a fifth of the insert
// (docs/BENCHMARKS.md, "Ingest"). A sequence of 0 is unknown and stored as
// NULL; malformed reasons, empty for nearly every row, are unpacked only
// where there are some. The same statement records the new rows for the
// counters (arrivalDeltas): one delta row per combination the batch touches.
const insertBatch = insertBatchHead + insertBatchTail

const insertBatchSkipping = insertBatchHead + `
ON CONFLICT (dead_lettered_at, source_key) DO NOTHING` + insertBatchTail

const insertBatchHead = `
WITH ins AS (
INSERT INTO dead_letters (
    tenant, item_type, subject, original_subject, msg_id, msg_id_derived,
    operation_id, correlation_id, principal, consumer, error, error_class, stack,
    attempts, first_failed_at, last_failed_at, dead_lettered_at,
    headers, header_block, payload, payload_sha256, payload_size, payload_unavailable,
    fingerprint, malformed, malformed_reasons, flags,
    source_kind, source_stream, source_seq, source_consumer, advisory, source_key, delivery, replay_of, generation)
SELECT u.tenant, u.item_type, u.subject, u.original_subject, u.msg_id, u.msg_id_derived,
    u.operation_id, u.correlation_id, u.principal, u.consumer, u.error, u.error_class, u.stack,
    u.attempts, u.first_failed_at, u.last_failed_at, u.dead_lettered_at,
    u.headers, u.header_block, u.payload, u.payload_sha256, u.payload_size, u.payload_unavailable,
    u.fingerprint, u.malformed,
    CASE WHEN u.malformed_reasons = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(u.malformed_reasons)) END,
    string_to_array(u.flags, ','),
    u.source_kind, u.source_stream, NULLIF(u.source_seq, 0), u.source_consumer, u.advisory, u.source_key, u.delivery,
    NULLIF(u.replay_of, 0), u.generation
FROM unnest(
    $1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bool[],
    $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[],
    $14::int[], $15::timestamptz[], $16::timestamptz[], $17::timestamptz[],
    $18::jsonb[], $19::bytea[], $20::bytea[], $21::bytea[], $22::int[], $23::bool[],
    $24::text[], $25::bool[], $26::jsonb[], $27::text[],
    $28::text[], $29::text[], $30::bigint[], $31::text[], $32::jsonb[], $33::bytea[], $34::text[],
    $35::bigint[], $36::int[]
) AS u(tenant, item_type, subject, original_subject, msg_id, msg_id_derived,
    operation_id, correlation_id, principal, consumer, error, error_class, stack,
    attempts, first_failed_at, last_failed_at, dead_lettered_at,
    headers, header_block, payload, payload_sha256, payload_size, payload_unavailable,
    fingerprint, malformed, malformed_reasons, flags,
    source_kind, source_stream, source_seq, source_consumer, advisory, source_key, delivery, replay_of, generation)`

const insertBatchTail = `
RETURNING id, tenant, item_type, error_class, status, fingerprint, malformed, dead_lettered_at
), ` + arrivalDeltas + `
SELECT tenant, item_type, error_class, malformed, dead_lettered_at FROM ins, announce`

// InsertResult is what Insert did with a batch.
type InsertResult struct {
	// Inserted are the rows created, in the parsed or the raw form;
	// records already stored (redeliveries) are not in it.
	Inserted []Inserted
	// Raw are the records PostgreSQL refused in their parsed form, stored
	// in their raw form instead (see RawForm).
	Raw []Refused
	// Unstorable are the records not stored at all: PostgreSQL refused
	// their raw form too. Their messages must not be acked.
	Unstorable []Refused
	// Statements counts the insert statements run: 1 when nothing was
	// refused, a few more per refused record (isolation by halves).
	Statements int
}

// Refused is a record of the batch (its index) PostgreSQL refused, and why.
type Refused struct {
	Index int
	Err   error
}

// Insert stores recs, one statement for the lot when nothing is refused;
// rows whose source key exists are skipped. Records that say they are the
// replay of a dead letter are linked to it first, or flagged (linkReplays). When PostgreSQL refuses the
// statement for any reason but being unreachable (see Unreachable), the
// batch is split in halves, and each half again, until every refused record
// is alone: one bad record costs its batch about 2·log2(n) statements, never
// the others' rows. A statement PostgreSQL could not finish for a reason
// not the data's (Busy: a statement timeout, memory, a lock) is not a
// refusal: Insert ends with the error, like an unreachable database, and
// the caller retries (the ingester: storeBatch). A refused record is stored in its raw form (RawForm),
// which holds nothing PostgreSQL can refuse; the raw forms are inserted the
// same way, and a record whose raw form is refused too is reported in
// Unstorable. An unreachable database ends Insert with the error and the
// result so far: the caller retries the whole batch later (what was stored
// is skipped then).
func (s *Store) Insert(ctx context.Context, recs []Record) (InsertResult, error) {
	var res InsertResult
	if err := s.linkReplays(ctx, recs); err != nil {
		return res, err
	}
	refused, err := s.isolate(ctx, recs, 0, &res)
	if err != nil || len(refused) == 0 {
		return res, err
	}
	raw := make([]Record, len(refused))
	for i, rf := range refused {
		raw[i] = RawForm(recs[rf.Index], rf.Err)
	}
	unstorable, err := s.isolate(ctx, raw, 0, &res)
	if err != nil {
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

// isolate inserts recs (whose first is recs[base] of the caller's batch,
// for the indexes it reports) and returns the records PostgreSQL refused
// alone.
func (s *Store) isolate(ctx context.Context, recs []Record, base int, res *InsertResult) ([]Refused, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	res.Statements++
	in, err := s.insert(ctx, recs)
	switch {
	case err == nil:
		res.Inserted = append(res.Inserted, in...)
		return nil, nil
	case Unreachable(err) || Busy(err) || ctx.Err() != nil:
		return nil, err // not the data's fault: the caller tries again
	case len(recs) == 1:
		return []Refused{{Index: base, Err: err}}, nil
	}
	mid := len(recs) / 2
	left, err := s.isolate(ctx, recs[:mid], base, res)
	if err != nil {
		return left, err
	}
	right, err := s.isolate(ctx, recs[mid:], base+mid, res)
	return append(left, right...), err
}

func (s *Store) insert(ctx context.Context, recs []Record) ([]Inserted, error) {
	n := len(recs)
	var (
		tenant, itemType, subject, origSubject, msgID = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		opID, corrID, principal, consumer, errText    = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		class, stack, fingerprint, delivery           = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		srcKind, srcStream, srcConsumer               = make([]string, n), make([]string, n), make([]string, n)
		derived, unavailable, malformed               = make([]bool, n), make([]bool, n), make([]bool, n)
		attempts                                      = make([]*int32, n)
		first, last                                   = make([]*time.Time, n), make([]*time.Time, n)
		deadAt                                        = make([]time.Time, n)
		headers, reasons, advisory                    = make([][]byte, n), make([][]byte, n), make([][]byte, n)
		flags                                         = make([]string, n)
		block, payload, sha, key                      = make([][]byte, n), make([][]byte, n), make([][]byte, n), make([][]byte, n)
		size, generation                              = make([]int32, n), make([]int32, n)
		seq, replayOf                                 = make([]int64, n), make([]int64, n)
	)
	for i := range recs {
		r := &recs[i]
		tenant[i], itemType[i], subject[i], origSubject[i], msgID[i] = r.Tenant, r.ItemType, r.Subject, r.OriginalSubject, r.MsgID
		opID[i], corrID[i], principal[i], consumer[i], errText[i] = r.OperationID, r.CorrelationID, r.Principal, r.Consumer, r.Error
		class[i], stack[i], fingerprint[i], delivery[i] = string(r.ErrorClass), r.Stack, r.Fingerprint, r.Delivery
		srcKind[i], srcStream[i], srcConsumer[i] = r.SourceKind, r.SourceStream, r.SourceConsumer
		derived[i], unavailable[i], malformed[i] = r.MsgIDDerived, r.PayloadUnavailable, r.Malformed()
		attempts[i], first[i], last[i], deadAt[i] = r.Attempts, r.FirstFailedAt, r.LastFailedAt, r.DeadLetteredAt
		payload[i], sha[i], size[i], seq[i] = r.Payload, r.PayloadSHA256[:], int32(len(r.Payload)), int64(r.SourceSeq)
		key[i] = r.SourceKey[:]
		replayOf[i], generation[i] = r.ReplayOf, r.Generation
		if r.Delivery == "" {
			// Made by hand (tests, tools): keyed by its source position, as
			// every row was before stream recreation was taken into account.
			delivery[i] = fmt.Sprintf("%s #%d consumer %s", r.SourceStream, r.SourceSeq, r.SourceConsumer)
			k := SourceKey(delivery[i])
			key[i] = k[:]
		}
		if len(r.HeaderBlock) > 0 {
			block[i] = r.HeaderBlock
		}
		var err error
		if headers[i], err = json.Marshal(r.Headers); err != nil {
			return nil, fmt.Errorf("encode headers: %w", err)
		}
		if reasons[i], err = jsonStrings(r.MalformedReasons); err != nil {
			return nil, fmt.Errorf("encode malformed reasons: %w", err)
		}
		flags[i] = strings.Join(r.Flags, ",") // codes never hold a comma (see Record.flag)
		if len(r.Advisory) > 0 {
			advisory[i] = r.Advisory
		}
	}
	sql := insertBatch
	run := func() ([]Inserted, error) {
		rows, err := s.pool.Query(ctx, sql,
			tenant, itemType, subject, origSubject, msgID, derived,
			opID, corrID, principal, consumer, errText, class, stack,
			attempts, first, last, deadAt,
			headers, block, payload, sha, size, unavailable,
			fingerprint, malformed, reasons, flags,
			srcKind, srcStream, seq, srcConsumer, advisory, key, delivery, replayOf, generation)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Inserted, error) {
			var in Inserted
			var c string
			err := row.Scan(&in.Tenant, &in.ItemType, &c, &in.Malformed, &in.DeadLetteredAt)
			in.ErrorClass = ErrorClass(c)
			return in, err
		})
	}
	partitioned := false
	for {
		in, err := run()
		switch {
		case sourceKeyTaken(err) && sql == insertBatch:
			// A redelivery of a stored record: skip what is stored.
			sql = insertBatchSkipping
		case noPartition(err) && !partitioned:
			// A day without a partition (a dead letter stored long ago, or the
			// keeper behind): make them and store again. A day the functions
			// refuse leaves the first error to the caller.
			if perr := s.EnsurePartitions(ctx, deadAt); perr != nil {
				if Unreachable(perr) {
					return nil, perr
				}
				return nil, fmt.Errorf("%w (no partition for its day: %v)", err, perr)
			}
			partitioned = true
		default:
			return in, err
		}
	}
}

// sourceKeyTaken reports whether err is the source key's unique index
// refusing a row (SQLSTATE 23505): a record stored before. The primary key,
// the only other unique index of dead_letters, is an identity no insert
// names.
func sourceKeyTaken(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && strings.Contains(pgErr.ConstraintName, "source_key")
}

func jsonStrings(ss []string) ([]byte, error) {
	if ss == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(ss)
}

// Unreachable reports whether err says the database could not be reached or
// cannot take writes just now (the connection, the server starting or
// stopping, a full disk, too many connections, a read-only replica after a
// failover) or that the statement lost a race it can win later (deadlock,
// serialization): the same statement is worth trying again as it is. Any
// other error, with or without a SQLSTATE, may come from the data, and Insert
// isolates the record that causes it.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
			"53100", "53300", // disk_full, too_many_connections
			"25006",          // read_only_sql_transaction: a replica after a failover
			"40001", "40P01": // serialization_failure, deadlock_detected
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection_exception
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, puddle.ErrClosedPool) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Busy reports whether err says PostgreSQL could not finish the statement
// for a reason that is not the data's: it was cancelled or ran past
// statement_timeout (57014), the server is short of memory or other
// resources (class 53: out of memory, disk full, too many connections),
// a lock was not available (55P03, lock_timeout or NOWAIT) or an object
// is in use (55006), or a system or I/O error (class 58). The statement
// may well work later; it may also keep failing for one record (a row so
// large it always times out). Never a reason to store a record in its
// raw form.
func Busy(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch {
	case pgErr.Code == "57014", pgErr.Code == "55P03", pgErr.Code == "55006":
		return true
	}
	return strings.HasPrefix(pgErr.Code, "53") || strings.HasPrefix(pgErr.Code, "58")
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

// The lateral min() walks the partial index dead_letters_unresolved_age_idx:
// one index probe per tenant.
const selectOldestUnresolved = `
SELECT t.tenant, o.oldest
FROM (SELECT DISTINCT tenant FROM dead_letter_counts WHERE n > 0) t
CROSS JOIN LATERAL (
    SELECT min(d.dead_lettered_at) AS oldest FROM dead_letters d
    WHERE d.tenant = t.tenant
      AND d.status IN ('quarantined', 'replay_requested', 'replaying', 'replay_failed', 'needs_reconciliation')
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
