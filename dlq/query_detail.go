package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

// PreviewPayloadMax is how much of a payload GetPreview returns: the
// message page shows this much and offers the rest as a download.
const PreviewPayloadMax = 64 << 10

// OutOfScopeError is returned for a dead letter that exists in a tenant
// outside the caller's scope. Its code is not_found (quarantine.ErrorCode),
// so callers that only answer "not found" need nothing else; Tenant is for
// the audit record of the attempt.
type OutOfScopeError struct {
	ID     int64
	Tenant string
}

func (e *OutOfScopeError) Error() string {
	return fmt.Sprintf("dead letter %d is outside the caller's tenants: %v", e.ID, errNoDeadLetter)
}

// Unwrap gives the error its not_found code.
func (e *OutOfScopeError) Unwrap() error { return errNoDeadLetter }

// The preview reads every column but only the first bytes of the payload
// and of the header block: a 5 MB payload is neither shipped nor held for a
// page that shows 64 KB.
const selectPreview = `SELECT id, tenant, item_type, subject, original_subject, msg_id, msg_id_derived,
    operation_id, correlation_id, principal, consumer, error, error_class, stack,
    attempts, first_failed_at, last_failed_at, dead_lettered_at, received_at,
    headers, substring(header_block FROM 1 FOR $4) AS header_block, coalesce(octet_length(header_block), 0) AS header_block_size,
    substring(payload FROM 1 FOR $4) AS payload, payload_sha256, payload_size, payload_unavailable,
    fingerprint, malformed, malformed_reasons, flags, status, version, updated_at,
    source_kind, source_stream, source_seq, source_consumer, advisory, delivery, replay_of, generation
FROM dead_letters` + byID

// GetInScope returns dead letter id when its tenant is one of tenants. It
// returns not_found when there is none, and an *OutOfScopeError (also
// not_found) when it belongs to another tenant.
func (s *Store) GetInScope(ctx context.Context, id int64, tenants []string) (DeadLetter, error) {
	d, err := s.Get(ctx, id)
	if err != nil {
		return DeadLetter{}, err
	}
	if !slices.Contains(tenants, d.Tenant) {
		return DeadLetter{}, &OutOfScopeError{ID: id, Tenant: d.Tenant}
	}
	return d, nil
}

// GetPreview is GetInScope with the payload cut to its first
// PreviewPayloadMax bytes; PayloadSize stays the full size. with: as for
// Preview.
func (s *Store) GetPreview(ctx context.Context, id int64, tenants []string, with func(b *pgx.Batch, lo, hi time.Time)) (DeadLetter, error) {
	d, err := s.Preview(ctx, id, with)
	if err != nil {
		return DeadLetter{}, err
	}
	if !slices.Contains(tenants, d.Tenant) {
		return DeadLetter{}, &OutOfScopeError{ID: id, Tenant: d.Tenant}
	}
	return d, nil
}

// Preview returns dead letter id, whatever its tenant (the caller checks
// it), with the payload cut to its first PreviewPayloadMax bytes, or
// not_found. with, when not nil, queues more statements that do not depend
// on what the dead letter holds (what else its page shows) to go in the
// same round trip; they run whatever the answer, and may find the dead
// letter by id where its dead_lettered_at is in [lo, hi). When the dead
// letter was not where the partition map said (stored for an old day since
// it was read), the batch runs again over every partition.
func (s *Store) Preview(ctx context.Context, id int64, with func(b *pgx.Batch, lo, hi time.Time)) (DeadLetter, error) {
	op := fmt.Sprintf("get dead letter %d", id)
	snap, err := s.counters.Snapshot(ctx)
	if err != nil {
		return DeadLetter{}, fmt.Errorf("%s: %w", op, err)
	}
	lo, hi, narrow := snap.span(id)
	var found []DeadLetter // none, or the one
	run := func(lo, hi time.Time) error {
		b := &pgx.Batch{}
		b.Queue(selectPreview, id, lo, hi, PreviewPayloadMax).Query(func(rows pgx.Rows) error {
			var err error
			found, err = pgx.CollectRows(rows, pgx.RowToStructByName[DeadLetter])
			return err
		})
		if with != nil {
			with(b, lo, hi)
		}
		return s.pool.SendBatch(ctx, b).Close()
	}
	err = run(lo, hi)
	if err == nil && narrow && len(found) == 0 {
		err = run(minTime, maxTime)
	}
	if err != nil {
		return DeadLetter{}, fmt.Errorf("%s: %w", op, err)
	}
	if len(found) == 0 {
		return DeadLetter{}, fmt.Errorf("%s: %w", op, errNoDeadLetter)
	}
	return found[0], nil
}

// Payload is a dead letter's payload as received, for download.
type Payload struct {
	ID          int64  `db:"id"`
	Tenant      string `db:"tenant"`
	ItemType    string `db:"item_type"`
	MsgID       string `db:"msg_id"`
	Data        []byte `db:"payload"`
	SHA256      []byte `db:"payload_sha256"`
	Unavailable bool   `db:"payload_unavailable"`
}

const selectPayload = `SELECT id, tenant, item_type, msg_id, payload, payload_sha256, payload_unavailable
FROM dead_letters` + byID

// PayloadInScope returns the whole payload of dead letter id when its
// tenant is one of tenants; errors as GetInScope.
func (s *Store) PayloadInScope(ctx context.Context, id int64, tenants []string) (Payload, error) {
	return readInScope(ctx, s, id, tenants, "payload", func(lo, hi time.Time) (Payload, string, error) {
		rows, err := s.pool.Query(ctx, selectPayload, id, lo, hi)
		if err != nil {
			return Payload{}, "", err
		}
		p, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Payload])
		return p, p.Tenant, err
	})
}

// readInScope reads what of dead letter id with read (given the partition
// span to look in; it returns the value and the dead letter's tenant) and
// returns it when the tenant is one of tenants: not_found when there is no
// such dead letter (read's pgx.ErrNoRows), an *OutOfScopeError (also
// not_found) when it belongs to another tenant.
func readInScope[T any](ctx context.Context, s *Store, id int64, tenants []string, what string,
	read func(lo, hi time.Time) (T, string, error)) (T, error) {
	var v, zero T
	var tenant string
	err := s.lookupByID(ctx, id, func(lo, hi time.Time) (err error) {
		v, tenant, err = read(lo, hi)
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return zero, fmt.Errorf("%s of dead letter %d: %w", what, id, errNoDeadLetter)
	case err != nil:
		return zero, fmt.Errorf("%s of dead letter %d: %w", what, id, err)
	case !slices.Contains(tenants, tenant):
		return zero, &OutOfScopeError{ID: id, Tenant: tenant}
	}
	return v, nil
}

// The texts of a dead letter the detail page may show only the start of.
const (
	TextError = "error"
	TextStack = "stack"
)

const selectText = `SELECT tenant, CASE WHEN $4 = 'stack' THEN stack ELSE error END FROM dead_letters` + byID

// TextInScope returns the whole error (TextError) or stack trace
// (TextStack) of dead letter id when its tenant is one of tenants; errors
// as GetInScope.
func (s *Store) TextInScope(ctx context.Context, id int64, tenants []string, which string) (string, error) {
	if which != TextError && which != TextStack {
		return "", fmt.Errorf("text %q of dead letter %d: %w", which, id, quarantine.Errorf(quarantine.EINVALID, "no such text"))
	}
	return readInScope(ctx, s, id, tenants, which, func(lo, hi time.Time) (text, tenant string, err error) {
		err = s.pool.QueryRow(ctx, selectText, id, lo, hi, which).Scan(&tenant, &text)
		return text, tenant, err
	})
}

const selectTenant = `SELECT tenant FROM dead_letters` + byID

// TenantOf returns the tenant of dead letter id, or not_found.
func (s *Store) TenantOf(ctx context.Context, id int64) (string, error) {
	var tenant string
	err := s.lookupByID(ctx, id, func(lo, hi time.Time) error {
		return s.pool.QueryRow(ctx, selectTenant, id, lo, hi).Scan(&tenant)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("tenant of dead letter %d: %w", id, errNoDeadLetter)
	}
	if err != nil {
		return "", fmt.Errorf("tenant of dead letter %d: %w", id, err)
	}
	return tenant, nil
}

// TenantsOf returns the tenant of each of ids that exists.
func (s *Store) TenantsOf(ctx context.Context, ids []int64) (map[int64]string, error) {
	keys, err := s.Keys(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("tenants of dead letters: %w", err)
	}
	out := make(map[int64]string, len(keys))
	for _, k := range keys {
		out[k.ID] = k.Tenant
	}
	return out, nil
}
