package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quarantine-console/quarantine"
)

// appendLockKey is the pg_advisory_xact_lock key that serialises appends
// ("QAUDIT" then 0001). Nothing else in the database may use it.
const appendLockKey int64 = 0x5141554449540001

// Held until the caller's transaction commits or rolls back, so the next
// appender reads a head that includes this entry, or that never saw it.
const lockAppend = `SELECT pg_advisory_xact_lock($1)`

// Runs after the lock, as its own statement: in READ COMMITTED a statement
// takes its snapshot when it starts, so this one sees the entry the previous
// lock holder committed. It also lets PostgreSQL put the JSON in its jsonb
// form, which is what we hash and what it will print back, and fixes at:
// the database clock, or the head's at when the clock reads earlier (it was
// set back), so that at never goes back along the chain.
const prepareAppend = `
SELECT current_setting('transaction_isolation'),
       COALESCE($1::timestamptz, GREATEST(clock_timestamp(), head.at)),
       $2::jsonb::text,
       $3::jsonb::text,
       COALESCE(head.seq, 0),
       head.hash,
       head.at
FROM (VALUES (1)) AS one
LEFT JOIN (SELECT seq, hash, at FROM audit_log ORDER BY seq DESC LIMIT 1) AS head ON true`

const insertEntry = `
INSERT INTO audit_log (seq, at, actor_issuer, actor_subject, actor_email, actor_email_verified, tenant, action,
    object_type, object_id, message_id, operation_id, request_id, reason, outcome,
    before, after, remote_addr, user_agent, prev_hash, hash, hash_version, content_digest, nonce)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
    $16::jsonb, $17::jsonb, $18, $19, $20, $21, $22, $23, $24)
RETURNING before::text, after::text`

// Append validates e and writes it as the next entry of the chain inside tx,
// the caller's transaction, so it commits or rolls back with the change it
// records. It returns the entry as stored.
//
// Append takes a transaction-scoped advisory lock that every other append
// waits for until tx ends: call it late in the transaction. tx must be READ
// COMMITTED (PostgreSQL's default); at stricter levels its snapshot could
// predate the previous append, and Append returns an error instead.
//
// Text fields are stored as given, except that invalid UTF-8 and NUL bytes,
// which PostgreSQL cannot store, become U+FFFD, and that each is bounded
// (bound.go): a longer value is cut and marked as cut. Before and After
// longer than 32 KiB of JSON are replaced by their length and SHA-256. It
// returns an invalid quarantine.Error when e breaks a rule (see Event.Validate), when Before or After
// do not marshal to JSON that PostgreSQL accepts, or when At is out of its
// range, or when At is earlier than the newest entry's (at never goes back
// along the chain; without At, the database clock is used, or the newest
// entry's at when the clock reads earlier). After an error other than a
// validation one, tx is aborted.
func Append(ctx context.Context, tx pgx.Tx, e Event) (entry Entry, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("append audit event %q: %w", e.Action, err)
		}
	}()
	if err := e.Validate(); err != nil {
		return Entry{}, err
	}
	before, after, err := marshalBeforeAfter(&e)
	if err != nil {
		return Entry{}, err
	}
	var at *time.Time // NULL: the database clock
	if !e.At.IsZero() {
		at = &e.At
	}

	if _, err := tx.Exec(ctx, lockAppend, appendLockKey); err != nil {
		return Entry{}, fmt.Errorf("lock the chain: %w", err)
	}
	var (
		isolation             string
		jsonBefore, jsonAfter *string
		headSeq               int64
		headHash              []byte
		headAt                *time.Time
	)
	entry = newEntry(&e)
	err = tx.QueryRow(ctx, prepareAppend, at, before, after).
		Scan(&isolation, &entry.At, &jsonBefore, &jsonAfter, &headSeq, &headHash, &headAt)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
		// Data exception: JSON that jsonb refuses (\u0000), a time out of range.
		return Entry{}, quarantine.Errorf(quarantine.EINVALID, "%s", pgErr.Message)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("read chain head: %w", err)
	}
	if isolation != "read committed" {
		return Entry{}, fmt.Errorf("transaction is %s: appends need read committed, where each statement sees the latest head", isolation)
	}
	entry.At = entry.At.UTC()
	if headAt != nil && entry.At.Before(*headAt) {
		return Entry{}, quarantine.Errorf(quarantine.EINVALID, "at %s is before the newest entry's, seq %d at %s: entries are dated in the order they are appended",
			entry.At.Format(timeLayout), headSeq, headAt.UTC().Format(timeLayout))
	}
	if entry.Before, err = canonicalJSON(jsonBefore); err != nil {
		return Entry{}, fmt.Errorf("before: %w", err)
	}
	if entry.After, err = canonicalJSON(jsonAfter); err != nil {
		return Entry{}, fmt.Errorf("after: %w", err)
	}
	entry.Seq = headSeq + 1
	entry.PrevHash = headHash // nil when the log is empty
	seal(&entry)

	var storedBefore, storedAfter *string
	err = tx.QueryRow(ctx, insertEntry,
		entry.Seq, entry.At, entry.Actor.Issuer, entry.Actor.Subject, entry.Actor.Email, entry.Actor.EmailVerified, entry.Tenant, entry.Action,
		entry.ObjectType, entry.ObjectID, entry.MessageID, entry.OperationID, entry.RequestID, entry.Reason, string(entry.Outcome),
		rawText(entry.Before), rawText(entry.After), entry.RemoteAddr, entry.UserAgent, entry.PrevHash, entry.Hash,
		entry.HashVersion, entry.ContentDigest, entry.Nonce,
	).Scan(&storedBefore, &storedAfter)
	if err != nil {
		return Entry{}, fmt.Errorf("insert seq %d: %w", entry.Seq, err)
	}
	// Verify will hash what it reads back; make sure that is what we hashed.
	if err := sameJSON(storedBefore, entry.Before); err != nil {
		return Entry{}, fmt.Errorf("seq %d before: %w", entry.Seq, err)
	}
	if err := sameJSON(storedAfter, entry.After); err != nil {
		return Entry{}, fmt.Errorf("seq %d after: %w", entry.Seq, err)
	}
	return entry, nil
}

// RecordTimeout bounds the write of a row in a transaction of its own
// (AppendFunc, AppendBatchFunc), which its caller's cancellation does not
// stop (Detached).
const RecordTimeout = 10 * time.Second

// Detached returns ctx for recording what has already happened: its values
// without its cancellation or deadline, bounded by RecordTimeout instead.
// A refused attempt happened whether or not the client waits for the
// answer: a request whose client hangs up (net/http then cancels its
// context) must still leave its rows, or whoever tries what they may not do
// could drop the connection at once and leave no trace. The reads such a
// row needs (the session that names the person, what the attempt named)
// use it too.
func Detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), RecordTimeout)
}

// AppendFunc appends e in a transaction of its own on db, for events that
// change nothing else (a login, a denied attempt). The write does not
// depend on ctx staying alive (Detached): the event already happened. It
// returns what Append returns.
func AppendFunc(ctx context.Context, db Beginner, e Event) (Entry, error) {
	ctx, cancel := Detached(ctx)
	defer cancel()
	var entry Entry
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		entry, err = Append(ctx, tx, e)
		return err
	})
	if err != nil {
		return Entry{}, err
	}
	return entry, nil
}

// marshalJSON returns v as JSON text, or nil (SQL NULL) for nil and for
// values that marshal to null.
func marshalJSON(v any) (*string, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return nil, nil
	}
	s := string(b)
	return &s, nil
}

// marshalBeforeAfter returns e's Before and After as bounded JSON text.
func marshalBeforeAfter(e *Event) (before, after *string, err error) {
	if before, err = marshalJSON(e.Before); err != nil {
		return nil, nil, quarantine.Errorf(quarantine.EINVALID, "before: %v", err)
	}
	if after, err = marshalJSON(e.After); err != nil {
		return nil, nil, quarantine.Errorf(quarantine.EINVALID, "after: %v", err)
	}
	return boundJSON(before), boundJSON(after), nil
}

func rawText(j json.RawMessage) *string {
	if j == nil {
		return nil
	}
	s := string(j)
	return &s
}

func sameJSON(stored *string, hashed json.RawMessage) error {
	got, err := canonicalJSON(stored)
	if err != nil {
		return err
	}
	if (got == nil) != (hashed == nil) || !bytes.Equal(got, hashed) {
		return fmt.Errorf("stored JSON %q differs from the hashed form %q", got, hashed)
	}
	return nil
}
