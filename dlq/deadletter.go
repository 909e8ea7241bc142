package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

// errNoDeadLetter answers for a dead letter that does not exist or is not
// the caller's to see: the same answer for both. Every error of the package
// is a quarantine.Error, wrapped with the operation.
var errNoDeadLetter = quarantine.Errorf(quarantine.ENOTFOUND, "There is no such dead letter.")

// DeadLetter is a stored dead letter, as the console shows it.
type DeadLetter struct {
	ID                 int64      `db:"id"`
	Tenant             string     `db:"tenant"`
	ItemType           string     `db:"item_type"`
	Subject            string     `db:"subject"`
	OriginalSubject    string     `db:"original_subject"`
	MsgID              string     `db:"msg_id"`
	MsgIDDerived       bool       `db:"msg_id_derived"`
	OperationID        string     `db:"operation_id"`
	CorrelationID      string     `db:"correlation_id"`
	Principal          string     `db:"principal"`
	Consumer           string     `db:"consumer"`
	Error              string     `db:"error"`
	ErrorClass         ErrorClass `db:"error_class"`
	Stack              string     `db:"stack"`
	Attempts           *int32     `db:"attempts"`
	FirstFailedAt      *time.Time `db:"first_failed_at"`
	LastFailedAt       *time.Time `db:"last_failed_at"`
	DeadLetteredAt     time.Time  `db:"dead_lettered_at"`
	ReceivedAt         time.Time  `db:"received_at"`
	HeadersJSON        []byte     `db:"headers"`
	HeaderBlock        []byte     `db:"header_block"`      // nil: not kept (the NATS client read the headers)
	HeaderBlockSize    int32      `db:"header_block_size"` // whole size; HeaderBlock may be cut (GetPreview)
	Payload            []byte     `db:"payload"`
	PayloadSHA256      []byte     `db:"payload_sha256"`
	PayloadSize        int32      `db:"payload_size"`
	PayloadUnavailable bool       `db:"payload_unavailable"`
	Fingerprint        string     `db:"fingerprint"`
	Malformed          bool       `db:"malformed"`
	MalformedReasons   []string   `db:"malformed_reasons"`
	Flags              []string   `db:"flags"`
	Status             Status     `db:"status"`
	Version            int32      `db:"version"`
	UpdatedAt          time.Time  `db:"updated_at"`
	SourceKind         string     `db:"source_kind"`
	SourceStream       string     `db:"source_stream"`
	SourceSeq          *int64     `db:"source_seq"` // nil: the delivery's metadata could not be read
	SourceConsumer     string     `db:"source_consumer"`
	Advisory           []byte     `db:"advisory"`
	Delivery           string     `db:"delivery"`
	// ReplayOf is the dead letter whose replay this one is (nil: none);
	// Generation counts the replays of its message that came back before it.
	ReplayOf   *int64 `db:"replay_of"`
	Generation int32  `db:"generation"`
}

// Headers decodes the stored headers into the values as received.
func (d *DeadLetter) Headers() ([]HeaderValue, error) {
	var hs []HeaderValue
	if err := json.Unmarshal(d.HeadersJSON, &hs); err != nil {
		return nil, fmt.Errorf("decode headers of dead letter %d: %w", d.ID, err)
	}
	return hs, nil
}

const deadLetterColumns = `id, tenant, item_type, subject, original_subject, msg_id, msg_id_derived,
    operation_id, correlation_id, principal, consumer, error, error_class, stack,
    attempts, first_failed_at, last_failed_at, dead_lettered_at, received_at,
    headers, header_block, coalesce(octet_length(header_block), 0) AS header_block_size, payload, payload_sha256, payload_size, payload_unavailable,
    fingerprint, malformed, malformed_reasons, flags, status, version, updated_at,
    source_kind, source_stream, source_seq, source_consumer, advisory, delivery, replay_of, generation`

// byID is the condition of a lookup by id: the id, and the range of
// dead_lettered_at to look in ($2, $3), which the partition map gives
// (lookupByID). The range leaves the other partitions out before the
// statement opens them.
const byID = ` WHERE id = $1 AND dead_lettered_at >= $2 AND dead_lettered_at < $3`

// Get returns dead letter id, or not_found when there is none.
func (s *Store) Get(ctx context.Context, id int64) (DeadLetter, error) {
	return s.getOne(ctx, fmt.Sprintf("get dead letter %d", id), `SELECT `+deadLetterColumns+` FROM dead_letters`+byID, id)
}

// lookupByID runs a lookup of id (run, given the range of dead_lettered_at
// to look in) first in the days the partition map gives id, then, when
// that finds nothing (pgx.ErrNoRows) and the days were fewer than all,
// everywhere: a dead letter stored for an old day since the map was read
// is found the second time.
func (s *Store) lookupByID(ctx context.Context, id int64, run func(lo, hi time.Time) error) error {
	snap, err := s.counters.Snapshot(ctx)
	if err != nil {
		return err
	}
	lo, hi, narrow := snap.span(id)
	err = run(lo, hi)
	if narrow && errors.Is(err, pgx.ErrNoRows) {
		err = run(minTime, maxTime)
	}
	return err
}

// getOne reads the one dead letter sql (whose first parameters are byID's)
// selects for id; none is not_found. Errors are wrapped with op.
func (s *Store) getOne(ctx context.Context, op, sql string, id int64, args ...any) (DeadLetter, error) {
	var d DeadLetter
	err := s.lookupByID(ctx, id, func(lo, hi time.Time) error {
		rows, err := s.pool.Query(ctx, sql, append([]any{id, lo, hi}, args...)...)
		if err != nil {
			return err
		}
		d, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[DeadLetter])
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return DeadLetter{}, fmt.Errorf("%s: %w", op, errNoDeadLetter)
	}
	if err != nil {
		return DeadLetter{}, fmt.Errorf("%s: %w", op, err)
	}
	return d, nil
}

// BySource returns the dead letter stored from a stream position (consumer
// is empty for DLQ messages); the newest one when the stream was made again
// and its sequences repeat; not_found when there is none. It reads the
// table without an index: for tests and tools, not for pages.
func (s *Store) BySource(ctx context.Context, stream string, seq uint64, consumer string) (DeadLetter, error) {
	op := fmt.Sprintf("get dead letter %s:%d", stream, seq)
	rows, err := s.pool.Query(ctx, `SELECT `+deadLetterColumns+` FROM dead_letters
        WHERE source_stream = $1 AND source_seq = $2 AND source_consumer = $3 ORDER BY id DESC LIMIT 1`, stream, int64(seq), consumer)
	if err != nil {
		return DeadLetter{}, fmt.Errorf("%s: %w", op, err)
	}
	d, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[DeadLetter])
	if errors.Is(err, pgx.ErrNoRows) {
		return DeadLetter{}, fmt.Errorf("%s: %w", op, errNoDeadLetter)
	}
	if err != nil {
		return DeadLetter{}, fmt.Errorf("%s: %w", op, err)
	}
	return d, nil
}
