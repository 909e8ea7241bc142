package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Config is what the replay service needs besides the database.
type Config struct {
	// Policy returns the policy table in force (it may change between calls).
	Policy func() *replaypolicy.Table
	// Reload reads the policy file again and puts it in force (Policy
	// returns it from then on); nil: the table cannot be reloaded. A
	// process whose table is not the active version (replay_policy_active)
	// reloads before it judges anything.
	Reload func() (*replaypolicy.Table, error)
	// Subjects decides which subjects a tenant's replays may publish to
	// (nil: none, so nothing is replayed).
	Subjects *SubjectAllowlist
	// DraftTTL is how long a draft (a frozen selection) may wait for its
	// submit before it expires; 0: forever. The sweeper voids expired ones.
	DraftTTL time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Revalidation says a revalidation service answers (REVALIDATE_SUBJECT
	// is set); without one, revalidate items are refused from the draft on,
	// naming the setting.
	Revalidation bool
	// Windows reads the duplicate windows of target streams (nil: none is
	// read, and drafts do not say which items wait for one).
	Windows WindowReader
	// WindowMargin is added to every duplicate window for the clocks of the
	// broker, the database and the producers; default DefaultWindowMargin.
	WindowMargin time.Duration
	// DeadLetters finds dead letters by id (where each is stored); default
	// a store of its own on the service's pool.
	DeadLetters *dlq.Store
	// SelectionHeaderBytes bounds the header bytes one selection copies
	// into its drafts; default MaxSelectionHeaderBytes.
	SelectionHeaderBytes int
	// Authority says whether people still hold their rights when nobody
	// is signed in (nil: nothing is asked). An approval is counted only
	// after the request's requester and earlier approvers are asked
	// (voidLostApprovals); workers ask again before they publish.
	Authority Authority
	// MaxPayload is the NATS server's max_payload in bytes (the
	// connection's MaxPayload): a replay bigger than it is refused when it
	// is judged, and so is an edit that makes it so; 0: unknown.
	MaxPayload int64
}

// maxSelectionHeaderBytes is SelectionHeaderBytes or its default.
func (c Config) maxSelectionHeaderBytes() int {
	if c.SelectionHeaderBytes > 0 {
		return c.SelectionHeaderBytes
	}
	return MaxSelectionHeaderBytes
}

// DefaultWindowMargin is REPLAY_WINDOW_MARGIN's default.
const DefaultWindowMargin = time.Second

// NoRevalidation is the sentence of items that need a revalidation service
// on a deployment without one.
const NoRevalidation = "no revalidation service is configured (REVALIDATE_SUBJECT is empty)"

// noRevalidator says why revalidate items cannot be replayed here ("" when
// they can).
func (c Config) noRevalidator() string {
	if c.Revalidation {
		return ""
	}
	return NoRevalidation
}

// DefaultDraftTTL is REPLAY_DRAFT_TTL's default.
const DefaultDraftTTL = time.Hour

// Service stores replay requests, approvals and jobs. Every change is
// audited in its own transaction.
type Service struct {
	pool        *pgxpool.Pool
	cfg         Config
	deadLetters *dlq.Store
	// afterStaleRead is a test hook: VoidStale runs it once it read the
	// active version, before it voids.
	afterStaleRead func()
	// shortened is what the last ActivatePolicy's terms shortened
	// (ShortenedTerms).
	shortened atomic.Pointer[[]string]
}

// New returns the replay service on pool.
func New(pool *pgxpool.Pool, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Subjects == nil {
		cfg.Subjects = &SubjectAllowlist{}
	}
	if cfg.Subjects.dlqPrefix == "" { // the console's own dead letters are never a target (app sets DLQ_SUBJECT_PREFIX)
		cfg.Subjects = cfg.Subjects.Reserving(dlq.DefaultSubjectPrefix)
	}
	if cfg.WindowMargin <= 0 {
		cfg.WindowMargin = DefaultWindowMargin
	}
	if cfg.DeadLetters == nil {
		cfg.DeadLetters = dlq.NewStore(pool)
	}
	return &Service{pool: pool, cfg: cfg, deadLetters: cfg.DeadLetters}
}

// Policy returns the table in force.
func (s *Service) Policy() *replaypolicy.Table { return s.cfg.Policy() }

// Revalidates reports whether a revalidation service answers here
// (Config.Revalidation).
func (s *Service) Revalidates() bool { return s.cfg.Revalidation }

// refuse turns a rule's verdict into the error of an action it refuses:
// forbidden for who may act, invalid for what was typed, else a conflict
// with the state of things.
func refuse(v replaypolicy.Verdict, code string) error {
	return quarantine.Errorf(code, "%s", v.Reason)
}

// auditDenied records that actor was refused action on request id of
// tenant (err says why), in a transaction of its own since the attempt's
// rolled back. It returns err, or the failure to audit it.
func (s *Service) auditDenied(ctx context.Context, actor quarantine.Actor, meta quarantine.RequestMeta, action, tenant string, id int64, err error) error {
	return s.auditDeniedObject(ctx, actor, meta, action, "replay_request", fmt.Sprint(id), err, tenant)
}

// judging returns the contexts of a service action up to its refusals:
// its transaction's (tx: ctx's values without its cancellation, and no
// time bound but the action's own) and that of the reads that decide
// whether the actor is refused (reads: the request, who they are now,
// their standing; audit.Detached, bounded by audit.RecordTimeout), so that
// an attempt the rules refuse is judged and recorded whether or not the
// client waits for the answer: a client gone before those reads left
// nothing judged and nothing written, so whoever tries what they may not
// could drop the connection and leave no trace. Past the refusals, the
// action checks ctx (the client's) before it changes anything, and changes
// it on ctx: nothing is changed for a client that left.
func judging(ctx context.Context) (tx, reads context.Context, cancel context.CancelFunc) {
	reads, cancel = audit.Detached(ctx)
	return context.WithoutCancel(ctx), reads, cancel
}

// auditDeniedObject is auditDenied for any object (a replay batch), one
// row in each of tenants (the tenants the refusal touches: a batch's
// requests are one per tenant), written together.
func (s *Service) auditDeniedObject(ctx context.Context, actor quarantine.Actor, meta quarantine.RequestMeta, action, objType, objID string, err error, tenants ...string) error {
	events := make([]audit.Event, 0, len(tenants))
	for _, tenant := range tenants {
		e := audit.NewEvent(actor, meta, action)
		e.Outcome, e.Tenant, e.ObjectType, e.ObjectID, e.Reason = audit.OutcomeDenied, tenant, objType, objID, quarantine.ErrorMessage(err)
		events = append(events, e)
	}
	if _, aerr := audit.AppendBatchFunc(ctx, s.pool, events); aerr != nil {
		return fmt.Errorf("audit refused %s: %w", action, aerr)
	}
	return err
}

// refusedIDs are the dead letters of a selection the service refuses.
type refusedIDs = dlq.RefusedIDs

// auditRefused writes the denied audit rows (a row per tenant) for the ids
// an action refused, nothing when none, in tx when the action commits, or
// in a transaction of its own (tx nil) when it rolled back.
func (s *Service) auditRefused(ctx context.Context, tx pgx.Tx, actor quarantine.Actor, meta quarantine.RequestMeta, action string, refused refusedIDs) error {
	events := refused.Events(audit.NewEvent(actor, meta, action))
	var err error
	if tx != nil {
		_, err = audit.AppendBatch(ctx, tx, events)
	} else {
		_, err = audit.AppendBatchFunc(ctx, s.pool, events)
	}
	if err != nil {
		return fmt.Errorf("audit refused %s: %w", action, err)
	}
	return nil
}

// requestEvent starts the audit event of actor's action on req.
func requestEvent(actor quarantine.Actor, meta quarantine.RequestMeta, action string, req *Request) audit.Event {
	e := audit.NewEvent(actor, meta, action)
	e.Tenant, e.ObjectType, e.ObjectID = req.Tenant, "replay_request", fmt.Sprint(req.ID)
	return e
}

// auditItems appends e for the request and, when itemAction is set, one row
// per live item (of only, by dead letter id, when only is not nil) naming
// its message and operation id, so an auditor finds every step of an
// item's replay by message id. An item's row holds the rest of what the
// intent hash covers of it (itemAfter). Every row of a request's step
// under an item's dead letter is written here, but a job's (the worker's,
// a halt's, a reconciliation's), which name the job.
func auditItems(ctx context.Context, tx pgx.Tx, requestID int64, e audit.Event, itemAction string, only map[int64]bool) error {
	if _, err := audit.Append(ctx, tx, e); err != nil {
		return err
	}
	if itemAction == "" {
		return nil
	}
	items, err := liveItems(ctx, tx, requestID)
	if err != nil {
		return err
	}
	events := make([]audit.Event, 0, len(items))
	for _, it := range items {
		if only == nil || only[it.DeadLetterID] {
			events = append(events, itemEvent(e, itemAction, it, itemAfter(requestID, it)))
		}
	}
	_, err = audit.AppendBatch(ctx, tx, events)
	return err
}

// maxAuditCorrelationID is the longest correlation id an item's audit row
// holds whole, as the log holds message and operation ids (512 bytes); a
// longer one is its dlq.BoundedKey, and item_sha256 binds it whole.
const maxAuditCorrelationID = 512

// itemAfter is what an item's audit row says of live item it of request
// requestID: with the row's object id (the dead letter), message id and
// operation id, every value of the item the intent hash covers (the
// headers by their hash, so a row stays small whatever the producer
// sent), its position, which orders the items in the intent, and its
// ItemHash, which the intent hashes. Computed here from the item as read:
// no statement more per item.
func itemAfter(requestID int64, it Item) map[string]any {
	headers := HeadersHash(it.Headers)
	return map[string]any{"request": requestID, "position": it.Position, "subject": it.Subject,
		"correlation_id": dlq.BoundedKey(it.CorrelationID, maxAuditCorrelationID),
		"payload_sha256": hex.EncodeToString(it.PayloadSHA256), "headers_sha256": hex.EncodeToString(headers),
		"item_sha256": hex.EncodeToString(itemHash(it, headers))}
}

// itemEvent is the request's audit event e told of item it: action on its
// dead letter, under its message and operation ids, with after.
func itemEvent(e audit.Event, action string, it Item, after map[string]any) audit.Event {
	e.Action, e.ObjectType, e.ObjectID = action, "dead_letter", fmt.Sprint(it.DeadLetterID)
	e.MessageID, e.OperationID = it.MsgID, it.OperationID
	e.Before, e.After = nil, after
	return e
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}
