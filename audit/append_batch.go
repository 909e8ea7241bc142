package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

// Canonicalises every event's JSON in one statement after the lock, and
// reads the head and the clock, like prepareAppend does for one event.
const prepareBatch = `
SELECT current_setting('transaction_isolation'),
       GREATEST(clock_timestamp(), (SELECT at FROM audit_log ORDER BY seq DESC LIMIT 1)),
       (SELECT at FROM audit_log ORDER BY seq DESC LIMIT 1),
       COALESCE((SELECT seq FROM audit_log ORDER BY seq DESC LIMIT 1), 0),
       (SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1),
       ARRAY(SELECT u.b::jsonb::text FROM unnest($1::text[]) WITH ORDINALITY AS u(b, n) ORDER BY u.n),
       ARRAY(SELECT u.a::jsonb::text FROM unnest($2::text[]) WITH ORDINALITY AS u(a, n) ORDER BY u.n)`

// AppendBatch appends events in order as consecutive entries of the chain,
// inside tx, with one lock, one head read and one COPY: what Append does for
// one event, at a cost that stays small for thousands. Events with a zero At
// get the same database clock reading (or the newest entry's at, when the
// clock reads earlier); an At earlier than the entry's before it is refused
// as an invalid quarantine.Error. It returns the entries as stored.
func AppendBatch(ctx context.Context, tx pgx.Tx, events []Event) ([]Entry, error) {
	if len(events) == 0 {
		return nil, nil
	}
	befores := make([]*string, len(events))
	afters := make([]*string, len(events))
	for i := range events {
		e := &events[i]
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("append audit batch, event %d: %w", i, err)
		}
		var err error
		if befores[i], afters[i], err = marshalBeforeAfter(e); err != nil {
			return nil, fmt.Errorf("append audit batch, event %d: %w", i, err)
		}
	}
	if _, err := tx.Exec(ctx, lockAppend, appendLockKey); err != nil {
		return nil, fmt.Errorf("append audit batch: lock the chain: %w", err)
	}
	var (
		isolation   string
		now         time.Time
		headAt      *time.Time
		headSeq     int64
		headHash    []byte
		jsonBefores []*string
		jsonAfters  []*string
	)
	if err := tx.QueryRow(ctx, prepareBatch, befores, afters).
		Scan(&isolation, &now, &headAt, &headSeq, &headHash, &jsonBefores, &jsonAfters); err != nil {
		return nil, fmt.Errorf("append audit batch: read chain head: %w", err)
	}
	if isolation != "read committed" {
		return nil, fmt.Errorf("append audit batch: transaction is %s: appends need read committed", isolation)
	}
	entries := make([]Entry, len(events))
	rows := make([][]any, len(events))
	prev := headHash
	var prevAt time.Time
	if headAt != nil {
		prevAt = headAt.UTC()
	}
	for i, e := range events {
		at := now
		if !e.At.IsZero() {
			at = e.At
		}
		entry := newEntry(&e)
		entry.Seq, entry.At, entry.PrevHash = headSeq+int64(i)+1, at.UTC().Truncate(time.Microsecond), prev
		if entry.At.Before(prevAt) {
			return nil, quarantine.Errorf(quarantine.EINVALID, "append audit batch, event %d: at %s is before the entry before it, at %s: entries are dated in the order they are appended",
				i, entry.At.Format(timeLayout), prevAt.Format(timeLayout))
		}
		prevAt = entry.At
		var err error
		if entry.Before, err = canonicalJSON(jsonBefores[i]); err != nil {
			return nil, fmt.Errorf("append audit batch, event %d: before: %w", i, err)
		}
		if entry.After, err = canonicalJSON(jsonAfters[i]); err != nil {
			return nil, fmt.Errorf("append audit batch, event %d: after: %w", i, err)
		}
		seal(&entry)
		prev = entry.Hash
		entries[i] = entry
		rows[i] = []any{entry.Seq, entry.At, entry.Actor.Issuer, entry.Actor.Subject, entry.Actor.Email, entry.Actor.EmailVerified, entry.Tenant,
			entry.Action, entry.ObjectType, entry.ObjectID, entry.MessageID, entry.OperationID, entry.RequestID, entry.Reason,
			string(entry.Outcome), rawText(entry.Before), rawText(entry.After), entry.RemoteAddr, entry.UserAgent, entry.PrevHash, entry.Hash,
			int16(entry.HashVersion), entry.ContentDigest, entry.Nonce}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"audit_log"}, []string{"seq", "at", "actor_issuer", "actor_subject",
		"actor_email", "actor_email_verified", "tenant", "action", "object_type", "object_id", "message_id", "operation_id", "request_id", "reason",
		"outcome", "before", "after", "remote_addr", "user_agent", "prev_hash", "hash", "hash_version", "content_digest", "nonce"}, pgx.CopyFromRows(rows)); err != nil {
		return nil, fmt.Errorf("append audit batch: copy %d entries: %w", len(rows), err)
	}
	return entries, nil
}

// AppendBatchFunc appends events in a transaction of their own on db, for
// events that change nothing else (denied attempts). The write does not
// depend on ctx staying alive (Detached), as AppendFunc's. It returns what
// AppendBatch returns.
func AppendBatchFunc(ctx context.Context, db Beginner, events []Event) ([]Entry, error) {
	ctx, cancel := Detached(ctx)
	defer cancel()
	var entries []Entry
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		entries, err = AppendBatch(ctx, tx, events)
		return err
	})
	return entries, err
}
