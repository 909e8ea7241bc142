package dlq

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store writes and reads dead letters in PostgreSQL.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

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
// rows cost one statement; a source key seen before (redelivery) is skipped.
const insertBatch = `
INSERT INTO dead_letters (
    tenant, item_type, subject, original_subject, msg_id, msg_id_derived,
    operation_id, correlation_id, principal, consumer, error, error_class, stack,
    attempts, first_failed_at, last_failed_at, dead_lettered_at,
    headers, payload, payload_sha256, payload_size, payload_unavailable,
    fingerprint, malformed, malformed_reasons,
    source_kind, source_stream, source_seq, source_consumer, advisory)
SELECT u.tenant, u.item_type, u.subject, u.original_subject, u.msg_id, u.msg_id_derived,
    u.operation_id, u.correlation_id, u.principal, u.consumer, u.error, u.error_class, u.stack,
    u.attempts, u.first_failed_at, u.last_failed_at, u.dead_lettered_at,
    u.headers, u.payload, u.payload_sha256, u.payload_size, u.payload_unavailable,
    u.fingerprint, u.malformed, ARRAY(SELECT jsonb_array_elements_text(u.malformed_reasons)),
    u.source_kind, u.source_stream, u.source_seq, u.source_consumer, u.advisory
FROM unnest(
    $1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bool[],
    $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[],
    $14::int[], $15::timestamptz[], $16::timestamptz[], $17::timestamptz[],
    $18::jsonb[], $19::bytea[], $20::bytea[], $21::int[], $22::bool[],
    $23::text[], $24::bool[], $25::jsonb[],
    $26::text[], $27::text[], $28::bigint[], $29::text[], $30::jsonb[]
) AS u(tenant, item_type, subject, original_subject, msg_id, msg_id_derived,
    operation_id, correlation_id, principal, consumer, error, error_class, stack,
    attempts, first_failed_at, last_failed_at, dead_lettered_at,
    headers, payload, payload_sha256, payload_size, payload_unavailable,
    fingerprint, malformed, malformed_reasons,
    source_kind, source_stream, source_seq, source_consumer, advisory)
ON CONFLICT (source_stream, source_seq, source_consumer) DO NOTHING
RETURNING tenant, item_type, error_class, malformed, dead_lettered_at`

// Insert stores recs in one statement; rows whose source key exists are
// skipped. When PostgreSQL rejects the data of the batch (not the
// connection), each record is retried alone, and a record still rejected is
// stored in its minimal raw form (see minimal), so one bad record neither
// blocks the others nor is lost. Connection and server errors are returned
// unchanged, for the caller to retry the whole batch.
func (s *Store) Insert(ctx context.Context, recs []Record) ([]Inserted, error) {
	out, err := s.insert(ctx, recs)
	if err == nil || !IsDataError(err) {
		return out, err
	}
	out = out[:0]
	for i := range recs {
		one, err := s.insert(ctx, recs[i:i+1])
		if err != nil && IsDataError(err) {
			m := minimal(recs[i], err)
			one, err = s.insert(ctx, []Record{m})
		}
		if err != nil {
			return out, fmt.Errorf("insert dead letter %s:%d: %w", recs[i].SourceStream, recs[i].SourceSeq, err)
		}
		out = append(out, one...)
	}
	return out, nil
}

func (s *Store) insert(ctx context.Context, recs []Record) ([]Inserted, error) {
	n := len(recs)
	var (
		tenant, itemType, subject, origSubject, msgID = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		opID, corrID, principal, consumer, errText    = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		class, stack, fingerprint                     = make([]string, n), make([]string, n), make([]string, n)
		srcKind, srcStream, srcConsumer               = make([]string, n), make([]string, n), make([]string, n)
		derived, unavailable, malformed               = make([]bool, n), make([]bool, n), make([]bool, n)
		attempts                                      = make([]*int32, n)
		first, last                                   = make([]*time.Time, n), make([]*time.Time, n)
		deadAt                                        = make([]time.Time, n)
		headers, reasons, advisory                    = make([][]byte, n), make([][]byte, n), make([][]byte, n)
		payload, sha                                  = make([][]byte, n), make([][]byte, n)
		size                                          = make([]int32, n)
		seq                                           = make([]int64, n)
	)
	for i := range recs {
		r := &recs[i]
		tenant[i], itemType[i], subject[i], origSubject[i], msgID[i] = r.Tenant, r.ItemType, r.Subject, r.OriginalSubject, r.MsgID
		opID[i], corrID[i], principal[i], consumer[i], errText[i] = r.OperationID, r.CorrelationID, r.Principal, r.Consumer, r.Error
		class[i], stack[i], fingerprint[i] = string(r.ErrorClass), r.Stack, r.Fingerprint
		srcKind[i], srcStream[i], srcConsumer[i] = r.SourceKind, r.SourceStream, r.SourceConsumer
		derived[i], unavailable[i], malformed[i] = r.MsgIDDerived, r.PayloadUnavailable, r.Malformed()
		attempts[i], first[i], last[i], deadAt[i] = r.Attempts, r.FirstFailedAt, r.LastFailedAt, r.DeadLetteredAt
		payload[i], sha[i], size[i], seq[i] = r.Payload, r.PayloadSHA256[:], int32(len(r.Payload)), int64(r.SourceSeq)
		var err error
		if headers[i], err = json.Marshal(r.Headers); err != nil {
			return nil, fmt.Errorf("encode headers: %w", err)
		}
		if r.MalformedReasons == nil {
			reasons[i] = []byte("[]")
		} else if reasons[i], err = json.Marshal(r.MalformedReasons); err != nil {
			return nil, fmt.Errorf("encode malformed reasons: %w", err)
		}
		if len(r.Advisory) > 0 {
			advisory[i] = r.Advisory
		}
	}
	rows, err := s.pool.Query(ctx, insertBatch,
		tenant, itemType, subject, origSubject, msgID, derived,
		opID, corrID, principal, consumer, errText, class, stack,
		attempts, first, last, deadAt,
		headers, payload, sha, size, unavailable,
		fingerprint, malformed, reasons,
		srcKind, srcStream, seq, srcConsumer, advisory)
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

// minimal is the form a record takes when PostgreSQL rejected its full
// form: its source key, tenant, item type, payload and timestamps, the raw
// headers as one base64 value, and the reason.
func minimal(r Record, cause error) Record {
	raw, _ := json.Marshal(r.Headers) // HeaderValue always marshals
	m := Record{
		Tenant:         asciiOnly(r.Tenant),
		ItemType:       asciiOnly(r.ItemType),
		Subject:        asciiOnly(r.Subject),
		MsgID:          asciiOnly(r.MsgID),
		MsgIDDerived:   r.MsgIDDerived,
		ErrorClass:     ClassUnclassified,
		DeadLetteredAt: r.DeadLetteredAt,
		Headers: []HeaderValue{{
			Name: "Dlq-Raw-Headers", Value: base64.StdEncoding.EncodeToString(raw), Encoding: "base64",
		}},
		PayloadUnavailable: r.PayloadUnavailable,
		SourceKind:         r.SourceKind,
		SourceStream:       asciiOnly(r.SourceStream),
		SourceSeq:          r.SourceSeq,
		SourceConsumer:     asciiOnly(r.SourceConsumer),
	}
	m.setPayload(r.Payload)
	m.MalformedReasons = append([]string{asciiOnly("stored in minimal form: PostgreSQL rejected the full row: " + cause.Error())},
		asciiStrings(r.MalformedReasons)...)
	m.Fingerprint = Fingerprint(m.ErrorClass, "minimal form", "")
	if m.DeadLetteredAt.IsZero() || m.DeadLetteredAt.Year() < 1 || m.DeadLetteredAt.Year() > 9999 {
		m.DeadLetteredAt = time.Now()
	}
	return m
}

func asciiOnly(s string) string {
	b := make([]rune, 0, len(s))
	for _, r := range s {
		if r >= 0x20 && r < 0x7f {
			b = append(b, r)
		} else {
			b = append(b, '?')
		}
	}
	return string(b)
}

func asciiStrings(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = asciiOnly(s)
	}
	return out
}

// IsDataError reports whether err is PostgreSQL refusing the data itself
// (a data exception or integrity violation) rather than a connection or
// server problem that a retry could fix.
func IsDataError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code[:2] {
	case "22", "23", "54": // data exception, integrity constraint, program limit
		return true
	}
	return false
}

// IsTransient reports whether err is worth retrying as it is: the
// connection, the server starting or stopping, a deadlock, a timeout.
func IsTransient(err error) bool {
	if err == nil || IsDataError(err) {
		return false
	}
	var netErr net.Error
	if errors.As(err, &netErr) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57", "40": // connection, resources, operator intervention, rollback
			return true
		}
		return false
	}
	// Errors without a SQLSTATE come from the connection (dial, reset, EOF).
	return !errors.Is(err, context.Canceled)
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
      AND d.status IN ('quarantined', 'replay_requested', 'replaying', 'replay_failed')
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

// Tenants returns the tenants that have dead letters, sorted.
func (s *Store) Tenants(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT tenant FROM dead_letter_counts WHERE n > 0 ORDER BY tenant`)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
