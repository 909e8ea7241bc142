package audit

// Test-only hooks for the audit_test package.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// HashOf exposes hashEntry, so tests can re-hash exported entries.
func HashOf(e *Entry) []byte { return hashEntry(e) }

// ContentDigestOf exposes contentDigest (hash version 3).
func ContentDigestOf(e *Entry) []byte { return contentDigest(e) }

// ChainHashOf exposes chainHash (hash version 3): the hash of the entry at
// seq whose content digest is digest, after the entry whose hash is prev.
func ChainHashOf(seq int64, digest, prev []byte) []byte { return chainHash(seq, digest, prev) }

var bulkColumns = []string{
	"seq", "at", "actor_issuer", "actor_subject", "actor_email", "actor_email_verified", "tenant", "action",
	"object_type", "object_id", "message_id", "operation_id", "request_id", "reason", "outcome",
	"before", "after", "remote_addr", "user_agent", "prev_hash", "hash", "hash_version", "content_digest", "nonce",
}

// BulkLoad appends n events made by gen in one transaction, far faster than
// Append: it extends the chain in Go and writes it with COPY, chunk by chunk,
// so memory stays at one chunk. The chain it writes is a valid one (the tests
// verify it); JSON is put in canonical form by PostgreSQL, one round trip a
// chunk. Events with a zero At get the current time.
func BulkLoad(ctx context.Context, db Beginner, n int, gen func(i int) Event) error {
	const chunk = 10_000
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockAppend, appendLockKey); err != nil {
			return err
		}
		var prev Entry
		if err := tx.QueryRow(ctx, chainHead).Scan(&prev.Seq, &prev.Hash); err != nil && err != pgx.ErrNoRows {
			return err
		}
		entries := make([]Entry, 0, chunk)
		jsonText := make([]*string, 0, 2*chunk)
		for start := 0; start < n; start += chunk {
			entries, jsonText = entries[:0], jsonText[:0]
			for i := start; i < min(n, start+chunk); i++ {
				e := gen(i)
				if err := e.Validate(); err != nil {
					return fmt.Errorf("event %d: %w", i, err)
				}
				at := e.At
				if at.IsZero() {
					at = time.Now()
				}
				before, err := marshalJSON(e.Before)
				if err != nil {
					return err
				}
				after, err := marshalJSON(e.After)
				if err != nil {
					return err
				}
				jsonText = append(jsonText, before, after)
				entry := newEntry(&e)
				entry.At = at.UTC().Truncate(time.Microsecond)
				entries = append(entries, entry)
			}
			canon, err := canonicalize(ctx, tx, jsonText)
			if err != nil {
				return err
			}
			for i := range entries {
				e := &entries[i]
				e.Before, e.After = canon[2*i], canon[2*i+1]
				e.Seq = prev.Seq + 1
				e.PrevHash = prev.Hash
				seal(e)
				prev = *e
			}
			_, err = tx.CopyFrom(ctx, pgx.Identifier{"audit_log"}, bulkColumns, pgx.CopyFromSlice(len(entries), func(i int) ([]any, error) {
				e := &entries[i]
				return []any{
					e.Seq, e.At, e.Actor.Issuer, e.Actor.Subject, e.Actor.Email, e.Actor.EmailVerified, e.Tenant, e.Action,
					e.ObjectType, e.ObjectID, e.MessageID, e.OperationID, e.RequestID, e.Reason, string(e.Outcome),
					rawText(e.Before), rawText(e.After), e.RemoteAddr, e.UserAgent, e.PrevHash, e.Hash,
					int16(e.HashVersion), e.ContentDigest, e.Nonce,
				}, nil
			}))
			if err != nil {
				return fmt.Errorf("copy rows %d..: %w", start, err)
			}
		}
		return nil
	})
}

// canonicalize returns each JSON text in the canonical form Append hashes.
func canonicalize(ctx context.Context, tx pgx.Tx, texts []*string) ([]json.RawMessage, error) {
	rows, err := tx.Query(ctx, `SELECT t::jsonb::text FROM unnest($1::text[]) WITH ORDINALITY AS u(t, i) ORDER BY i`, texts)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (json.RawMessage, error) {
		var s *string
		if err := row.Scan(&s); err != nil {
			return nil, err
		}
		return canonicalJSON(s)
	})
	if err != nil {
		return nil, fmt.Errorf("canonicalize json: %w", err)
	}
	return out, nil
}
