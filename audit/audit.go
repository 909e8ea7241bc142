package audit

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

// Outcome is what came of an attempted action.
type Outcome string

// The outcomes an entry may record.
const (
	OutcomeOK     Outcome = "ok"     // the change happened
	OutcomeDenied Outcome = "denied" // authorisation or policy refused it
	OutcomeError  Outcome = "error"  // it was attempted and failed
)

// Valid reports whether o is one of the defined outcomes.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeOK, OutcomeDenied, OutcomeError:
		return true
	}
	return false
}

// Event is what a caller asks to record. Action and Outcome are required.
// Of the Actor, the log keeps the issuer, subject, email and whether the
// provider verified it (the zero Actor is the system itself). Only verified
// emails are matched by the actor filter; others are shown as unverified.
type Event struct {
	Actor       quarantine.Actor
	Tenant      string // empty for events outside any tenant (login, policy table)
	Action      string // dotted verb, e.g. "replay.approve"
	ObjectType  string // e.g. "dead_letter", "replay_request"
	ObjectID    string
	MessageID   string // original message id of the dead letter concerned
	OperationID string
	Reason      string
	Outcome     Outcome
	// Before and After are the object's state around the change. They are
	// marshalled with encoding/json; nil (or a value that marshals to JSON
	// null, such as a nil pointer) is stored as SQL NULL.
	Before any
	After  any
	// RequestMeta is where the action came from; its RequestID (an HTTP
	// request or job id) joins the entry with the logs.
	quarantine.RequestMeta
	// At is when the event happened; the zero time means the database clock
	// at the append. It is stored with microsecond precision.
	At time.Time
}

// NewEvent starts an event: actor did action, from the request meta
// describes, with outcome ok.
func NewEvent(actor quarantine.Actor, meta quarantine.RequestMeta, action string) Event {
	return Event{Actor: actor, RequestMeta: meta, Action: action, Outcome: OutcomeOK}
}

// Validate reports the first broken rule as an invalid quarantine.Error.
func (e *Event) Validate() error {
	if strings.TrimSpace(e.Action) == "" {
		return quarantine.Errorf(quarantine.EINVALID, "action is required")
	}
	if e.Outcome == "" {
		return quarantine.Errorf(quarantine.EINVALID, "outcome is required")
	}
	if !e.Outcome.Valid() {
		return quarantine.Errorf(quarantine.EINVALID, "outcome %q is not one of ok, denied, error", e.Outcome)
	}
	return nil
}

// Entry is a stored event: its fields as the database holds them, plus its
// place in the chain.
type Entry struct {
	Seq         int64
	At          time.Time        // UTC, microsecond precision
	Actor       quarantine.Actor // issuer, subject, email and email verified
	Tenant      string
	Action      string
	ObjectType  string
	ObjectID    string
	MessageID   string
	OperationID string
	RequestID   string
	Reason      string
	Outcome     Outcome
	// Before and After are canonical JSON (jsonb text without insignificant
	// whitespace), nil for SQL NULL. These are the bytes the hash covers.
	Before     json.RawMessage
	After      json.RawMessage
	RemoteAddr string
	UserAgent  string
	PrevHash   []byte // nil for seq 1
	Hash       []byte
	// HashVersion is the encoding Hash covers: 1 for entries written before
	// actor_email_verified was recorded (it is NULL for them, and
	// Actor.EmailVerified false), 2 since, 3 for entries appended since
	// migration 0038. See hash.go.
	HashVersion int
	// ContentDigest is, from version 3, the digest of Nonce and the fields
	// above as stored beside them (Hash covers it, seq and PrevHash); nil
	// before.
	ContentDigest []byte
	// Nonce is, from version 3, the 16 random bytes drawn when the entry
	// was appended, which ContentDigest covers first: without it (a stub
	// shows none) the digest and the hash confirm no guess of the
	// entry's content. nil before version 3.
	Nonce []byte
}

// HashHex returns the entry's hash in lowercase hex.
func (e *Entry) HashHex() string { return hex.EncodeToString(e.Hash) }

// Querier runs queries: *pgxpool.Pool, *pgx.Conn and pgx.Tx all are one.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Beginner starts transactions: *pgxpool.Pool and *pgx.Conn both are one.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// entryColumns is the column list every read selects, in the order
// scanEntry scans. JSON comes back as jsonb text, which scanEntry compacts
// into the canonical form the hash covers.
const entryColumns = `seq, at, actor_issuer, actor_subject, actor_email, actor_email_verified, tenant, action,
    object_type, object_id, message_id, operation_id, request_id, reason, outcome,
    before::text, after::text, remote_addr, user_agent, prev_hash, hash, hash_version, content_digest, nonce`

// scanEntry scans one row selected with entryColumns; it is a pgx.RowToFunc.
func scanEntry(row pgx.CollectableRow) (Entry, error) {
	var (
		e             Entry
		before, after *string
		outcome       string
		verified      *bool
		version       *int16
	)
	err := row.Scan(&e.Seq, &e.At, &e.Actor.Issuer, &e.Actor.Subject, &e.Actor.Email, &verified, &e.Tenant, &e.Action,
		&e.ObjectType, &e.ObjectID, &e.MessageID, &e.OperationID, &e.RequestID, &e.Reason, &outcome,
		&before, &after, &e.RemoteAddr, &e.UserAgent, &e.PrevHash, &e.Hash, &version, &e.ContentDigest, &e.Nonce)
	if err != nil {
		return Entry{}, err
	}
	e.At = e.At.UTC()
	e.Outcome = Outcome(outcome)
	if verified != nil {
		e.Actor.EmailVerified = *verified
	}
	e.HashVersion = storedVersion(version, verified)
	if e.Before, err = canonicalJSON(before); err != nil {
		return Entry{}, fmt.Errorf("seq %d before: %w", e.Seq, err)
	}
	if e.After, err = canonicalJSON(after); err != nil {
		return Entry{}, fmt.Errorf("seq %d after: %w", e.Seq, err)
	}
	return e, nil
}
