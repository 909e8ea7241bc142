package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

// What of a dead letter's long values its page reads (Preview), in bytes
// and headers: a producer may send an error and a stack trace of
// megabytes, ten thousand headers and a payload of the stream's message
// size, and ingest keeps them whole. What is over these stays in
// PostgreSQL; the page offers each whole value as a download.
const (
	PreviewPayloadMax    = 64 << 10 // a payload, a header block
	PreviewTextMax       = 64 << 10 // an error, a stack trace
	PreviewHeadersMax    = 500      // headers
	PreviewHeaderTextMax = 4 << 10  // one header's name or value
)

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

// Detail is a dead letter as its page reads it (Preview): what the page
// shows of each long value, and the whole size of each. Payload and
// HeaderBlock are their first PreviewPayloadMax bytes (PayloadSize and
// HeaderBlockSize: whole); Error and Stack their first PreviewTextMax bytes,
// whole characters (ErrorSize, StackSize: whole); HeadersJSON the first
// PreviewHeadersMax headers (HeaderCount: all of them) with names and
// values cut to PreviewHeaderTextMax bytes (ShownHeaders).
type Detail struct {
	DeadLetter
	ErrorSize   int64 `db:"error_size"`
	StackSize   int64 `db:"stack_size"`
	HeaderCount int   `db:"header_count"`
}

// ShownHeader is one header as Preview reads it: Name and Value cut to
// PreviewHeaderTextMax bytes, whole characters (of the base64 text when
// NameEncoding or Encoding says so); ValueSize the whole value's size.
type ShownHeader struct {
	HeaderValue
	ValueSize int `json:"value_size"`
}

// ShownHeaders decodes the headers Preview read, in the order stored.
func (d *Detail) ShownHeaders() ([]ShownHeader, error) {
	var hs []ShownHeader
	if err := json.Unmarshal(d.HeadersJSON, &hs); err != nil {
		return nil, fmt.Errorf("decode headers of dead letter %d: %w", d.ID, err)
	}
	return hs, nil
}

// cutSQL is SQL for text expression x cut to at most max bytes (an int
// expression) at a character boundary: the longest prefix of whole
// characters that fits, x itself when all of it fits. left() keeps at most
// max characters (read from a TOASTed value as a slice); of their bytes b
// the cut is at max when the byte after it starts a character, otherwise
// at the start of the character it splits (a UTF-8 continuation byte is
// 10xxxxxx, at most three in a row). Only the cut value leaves PostgreSQL.
func cutSQL(x, max string) string {
	return `(SELECT convert_from(substring(b FROM 1 FOR CASE
            WHEN octet_length(b) <= m OR get_byte(b, m) & 192 <> 128 THEN m
            WHEN get_byte(b, m - 1) & 192 <> 128 THEN m - 1
            WHEN get_byte(b, m - 2) & 192 <> 128 THEN m - 2
            ELSE m - 3 END), 'UTF8')
        FROM (SELECT convert_to(left(` + x + `, ` + max + `), 'UTF8'), ` + max + `) AS cut(b, m))`
}

// The preview reads every column, of the long ones only what the page shows
// ($4: PreviewPayloadMax, $5: PreviewTextMax, $6: PreviewHeadersMax, $7:
// PreviewHeaderTextMax), and the whole size of each: a 5 MB payload, a
// megabyte of error or ten thousand headers are neither shipped nor held
// for a page that shows 64 KB of each and 500 headers. octet_length reads
// a TOASTed value's size without reading the value; the headers are
// decompressed and walked in PostgreSQL (jsonb_path_query stops at the
// 500th), not here. headers is JSON null for a dead letter stored with none
// at all (appendHeadersJSON).
var selectPreview = `SELECT id, tenant, item_type, subject, original_subject, msg_id, msg_id_derived,
    operation_id, correlation_id, principal, consumer,
    ` + cutSQL("error", "$5::int") + ` AS error, octet_length(error) AS error_size, error_class,
    ` + cutSQL("stack", "$5::int") + ` AS stack, octet_length(stack) AS stack_size,
    attempts, first_failed_at, last_failed_at, dead_lettered_at, received_at,
    (SELECT coalesce(jsonb_agg(jsonb_build_object(
                'name', ` + cutSQL("h->>'name'", "$7::int") + `, 'name_encoding', h->'name_encoding',
                'value', ` + cutSQL("h->>'value'", "$7::int") + `, 'encoding', h->'encoding',
                'value_size', octet_length(h->>'value')) ORDER BY n), '[]')
        FROM jsonb_path_query(CASE jsonb_typeof(headers) WHEN 'array' THEN headers END, '$[0 to $last]',
            jsonb_build_object('last', $6::int - 1)) WITH ORDINALITY AS x(h, n)) AS headers,
    CASE jsonb_typeof(headers) WHEN 'array' THEN jsonb_array_length(headers) ELSE 0 END AS header_count,
    substring(header_block FROM 1 FOR $4) AS header_block, coalesce(octet_length(header_block), 0) AS header_block_size,
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

// GetPreview is GetInScope as Preview reads it: the long values cut, with
// their whole sizes (Detail). with: as for Preview.
func (s *Store) GetPreview(ctx context.Context, id int64, tenants []string, with func(b *pgx.Batch, lo, hi time.Time)) (Detail, error) {
	d, err := s.Preview(ctx, id, with)
	if err != nil {
		return Detail{}, err
	}
	if !slices.Contains(tenants, d.Tenant) {
		return Detail{}, &OutOfScopeError{ID: id, Tenant: d.Tenant}
	}
	return d, nil
}

// Preview returns dead letter id, whatever its tenant (the caller checks
// it), as its page shows it (Detail: the long values cut), or not_found. with, when not nil, queues more statements that do not depend
// on what the dead letter holds (what else its page shows) to go in the
// same round trip; they run whatever the answer, and may find the dead
// letter by id where its dead_lettered_at is in [lo, hi). When the dead
// letter was not where the partition map said (stored for an old day since
// it was read), the batch runs again over every partition.
func (s *Store) Preview(ctx context.Context, id int64, with func(b *pgx.Batch, lo, hi time.Time)) (Detail, error) {
	op := fmt.Sprintf("get dead letter %d", id)
	snap, err := s.counters.Snapshot(ctx)
	if err != nil {
		return Detail{}, fmt.Errorf("%s: %w", op, err)
	}
	lo, hi, narrow := snap.span(id)
	var found []Detail // none, or the one
	run := func(lo, hi time.Time) error {
		b := &pgx.Batch{}
		b.Queue(selectPreview, id, lo, hi, PreviewPayloadMax, PreviewTextMax, PreviewHeadersMax, PreviewHeaderTextMax).Query(func(rows pgx.Rows) error {
			var err error
			found, err = pgx.CollectRows(rows, pgx.RowToStructByName[Detail])
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
		return Detail{}, fmt.Errorf("%s: %w", op, err)
	}
	if len(found) == 0 {
		return Detail{}, fmt.Errorf("%s: %w", op, errNoDeadLetter)
	}
	return found[0], nil
}

// Payload is a dead letter's payload as received, for download.
type Payload struct {
	ID          int64  `db:"id"`
	Tenant      string `db:"tenant"`
	ItemType    string `db:"item_type"`
	MsgID       string `db:"msg_id"`
	OperationID string `db:"operation_id"`
	Data        []byte `db:"payload"`
	SHA256      []byte `db:"payload_sha256"`
	Unavailable bool   `db:"payload_unavailable"`
}

const selectPayload = `SELECT id, tenant, item_type, msg_id, operation_id, payload, payload_sha256, payload_unavailable
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

// The texts of a dead letter the detail page may show only the start of:
// what TextInScope downloads whole.
const (
	TextError   = "error"   // the error
	TextStack   = "stack"   // the stack trace
	TextHeaders = "headers" // every header, as stored: indented JSON
)

// selectText reads one text of a dead letter, and only for the caller's
// tenants ($5): another tenant's is not shipped to be refused.
const selectText = `SELECT tenant, CASE WHEN tenant = ANY($5) THEN
        CASE $4 WHEN 'stack' THEN stack WHEN 'headers' THEN jsonb_pretty(headers) || E'\n' ELSE error END
    END
FROM dead_letters` + byID

// TextInScope returns the whole text which (a Text* name) of dead letter
// id when its tenant is one of tenants; errors as GetInScope. It is read
// straight into the bytes returned, held once: a text may be as long as the
// stream's largest message.
func (s *Store) TextInScope(ctx context.Context, id int64, tenants []string, which string) ([]byte, error) {
	if which != TextError && which != TextStack && which != TextHeaders {
		return nil, fmt.Errorf("text %q of dead letter %d: %w", which, id, quarantine.Errorf(quarantine.EINVALID, "no such text"))
	}
	return readInScope(ctx, s, id, tenants, which, func(lo, hi time.Time) (text []byte, tenant string, err error) {
		err = s.pool.QueryRow(ctx, selectText, id, lo, hi, which, tenants).Scan(&tenant, &text)
		return text, tenant, err
	})
}

const selectTenant = `SELECT tenant FROM dead_letters` + byID

// TenantOf returns the tenant of dead letter id, or not_found.
func (s *Store) TenantOf(ctx context.Context, id int64) (string, error) {
	return columnOf[string](ctx, s, id, selectTenant, "tenant")
}

const selectVersion = `SELECT version FROM dead_letters` + byID

// VersionOf returns the version of dead letter id (what CloseInput.Version
// checks), whatever its tenant (the caller checks it), or not_found. It
// reads that column alone: a page that only puts the version in its form
// (a close to confirm again) reads none of the long values Get reads
// whole, a payload of up to the stream's message size among them.
func (s *Store) VersionOf(ctx context.Context, id int64) (int32, error) {
	return columnOf[int32](ctx, s, id, selectVersion, "version")
}

// columnOf reads the one column query (a statement of byID) selects of
// dead letter id, named what in its errors, or not_found.
func columnOf[T any](ctx context.Context, s *Store, id int64, query, what string) (T, error) {
	var v T
	err := s.lookupByID(ctx, id, func(lo, hi time.Time) error {
		return s.pool.QueryRow(ctx, query, id, lo, hi).Scan(&v)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		err = errNoDeadLetter
	}
	if err != nil {
		return v, fmt.Errorf("%s of dead letter %d: %w", what, id, err)
	}
	return v, nil
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
