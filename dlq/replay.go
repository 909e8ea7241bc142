package dlq

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// ReplayStatus is where a replay request stands.
type ReplayStatus string

// Request statuses. A draft is a frozen selection waiting for the
// requester's reason and confirmation; void means the policy changed under it.
const (
	ReplayDraft           ReplayStatus = "draft"
	ReplayPendingApproval ReplayStatus = "pending_approval"
	ReplayApproved        ReplayStatus = "approved"
	ReplayRunning         ReplayStatus = "running"
	ReplayDone            ReplayStatus = "done"
	ReplayRejected        ReplayStatus = "rejected"
	ReplayCancelled       ReplayStatus = "cancelled"
	ReplayVoid            ReplayStatus = "void"
)

// Open reports whether the request can still change (approve, cancel).
func (s ReplayStatus) Open() bool {
	return s == ReplayDraft || s == ReplayPendingApproval || s == ReplayApproved || s == ReplayRunning
}

// ReplayRequest is a request to replay a frozen set of dead letters of one
// tenant and one policy class.
type ReplayRequest struct {
	ID                int64
	Batch             string
	Tenant            string
	Class             replaypolicy.Class
	Status            ReplayStatus
	Requester         quarantine.Actor
	Reason            string
	StatusReason      string
	PolicyVersion     string
	Rate              float64
	IntentHash        []byte
	ItemCount         int
	SkippedCount      int
	TypedConfirmation string
	PayloadEdited     bool
	CreatedAt         time.Time
	SubmittedAt       *time.Time
	ApprovedAt        *time.Time
	FinishedAt        *time.Time
	Version           int
}

// IntentHex is the intent hash as approvers see it.
func (r *ReplayRequest) IntentHex() string { return hex.EncodeToString(r.IntentHash) }

// ReplayItem is one dead letter of a request, as it will be published.
type ReplayItem struct {
	DeadLetterID  int64
	Position      int
	MsgID         string
	OperationID   string
	CorrelationID string
	Subject       string
	Headers       []HeaderValue
	PayloadSHA256 []byte
	SkipReason    string
}

// ReplayApproval is one approver's sign-off.
type ReplayApproval struct {
	Approver   quarantine.Actor
	IntentHash []byte
	At         time.Time
}

// ReplayConfig is what the replay store needs besides the database.
type ReplayConfig struct {
	// Policy returns the policy table in force (it may change between calls).
	Policy func() *replaypolicy.Table
	// Subjects decides which subjects may be published to (nil: all but
	// the always-refused system subjects).
	Subjects *SubjectAllowlist
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Replays stores replay requests, approvals and jobs. Every change is
// audited in its own transaction.
type Replays struct {
	pool *pgxpool.Pool
	cfg  ReplayConfig
}

// NewReplays returns the replay store.
func NewReplays(pool *pgxpool.Pool, cfg ReplayConfig) *Replays {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Subjects == nil {
		cfg.Subjects = &SubjectAllowlist{}
	}
	return &Replays{pool: pool, cfg: cfg}
}

// Policy returns the table in force.
func (r *Replays) Policy() *replaypolicy.Table { return r.cfg.Policy() }

// CanRequest says whether the actor may request replays of class in tenant.
type CanRequest func(tenant string, class replaypolicy.Class) bool

// MaxSelection bounds how many dead letters one selection may name.
const MaxSelection = 100_000

// ErrEmptySelection is returned when a selection names no dead letter the
// actor may see.
var ErrEmptySelection = quarantine.Errorf(quarantine.EINVALID, "the selection holds no dead letter you may replay")

const selectForDraft = `
SELECT d.id, d.tenant, d.item_type, d.original_subject, d.msg_id, d.msg_id_derived, d.operation_id,
       d.correlation_id, d.principal, d.headers, d.payload, d.payload_sha256, d.payload_unavailable, d.status,
       EXISTS (SELECT 1 FROM replay_ledger l WHERE l.tenant = d.tenant AND l.msg_id = d.msg_id AND l.class = 'dedupe') AS replayed
FROM dead_letters d
WHERE d.id = ANY($1) AND (d.tenant = ANY($2) OR $3)
ORDER BY d.id`

// CreateDrafts freezes a selection: the dead letters ids names (only those
// in tenants; all tenants when allTenants) become draft requests, one per
// tenant and policy class, each with its items, the headers and payload that
// will be sent, the skip reason of items that cannot be replayed, and its
// intent hash. Later arrivals are never added. It returns the batch token.
func (r *Replays) CreateDrafts(ctx context.Context, actor quarantine.Actor, ids []int64, tenants []string, allTenants bool, can CanRequest, meta quarantine.RequestMeta) (string, error) {
	if len(ids) == 0 {
		return "", ErrEmptySelection
	}
	if len(ids) > MaxSelection {
		return "", quarantine.Errorf(quarantine.EINVALID, "a selection may hold at most %d dead letters, this one holds %d", MaxSelection, len(ids))
	}
	table := r.cfg.Policy()
	batch := randomID()
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, selectForDraft, ids, tenants, allTenants)
		if err != nil {
			return err
		}
		type key struct {
			tenant string
			class  replaypolicy.Class
		}
		groups := map[key][]draftItem{}
		var order []key
		var id int64
		var d draftItem
		var headers []byte
		_, err = pgx.ForEachRow(rows, []any{&id, &d.tenant, &d.itemType, &d.item.Subject, &d.item.MsgID, &d.msgIDDerived,
			&d.item.OperationID, &d.item.CorrelationID, &d.principal, &headers, &d.payload, &d.item.PayloadSHA256,
			&d.unavailable, &d.status, &d.replayed}, func() error {
			d.item.DeadLetterID = id
			var hs []HeaderValue
			if err := json.Unmarshal(headers, &hs); err != nil {
				return fmt.Errorf("headers of dead letter %d: %w", id, err)
			}
			d.item.Headers = ReplayHeaders(hs)
			c, _ := table.ClassFor(d.itemType)
			k := key{d.tenant, c}
			if _, seen := groups[k]; !seen {
				order = append(order, k)
			}
			groups[k] = append(groups[k], d)
			d = draftItem{}
			return nil
		})
		if err != nil {
			return err
		}
		if len(order) == 0 {
			return ErrEmptySelection
		}
		for _, k := range order {
			items := groups[k]
			knobs, _ := table.Knobs(k.class)
			r.skipReasons(items, k.class, knobs, can(k.tenant, k.class))
			if err := r.insertDraft(ctx, tx, batch, k.tenant, k.class, knobs.DefaultRate, actor, items, meta, table.Version()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("create replay drafts: %w", err)
	}
	return batch, nil
}

type draftItem struct {
	item         ReplayItem
	tenant       string
	itemType     string
	msgIDDerived bool
	principal    string
	payload      []byte
	unavailable  bool
	status       Status
	replayed     bool
}

// skipReasons marks the items that cannot be part of the replay, with a
// sentence each; then the class's bulk rules over what is left.
func (r *Replays) skipReasons(items []draftItem, class replaypolicy.Class, k replaypolicy.Knobs, allowed bool) {
	live := 0
	for i := range items {
		d := &items[i]
		switch {
		case !allowed:
			d.item.SkipReason = fmt.Sprintf("you may not request %s replays in tenant %s", class, d.tenant)
		case d.status == StatusReplayed:
			d.item.SkipReason = "already replayed"
		case d.status == StatusDiscarded || d.status == StatusResolved:
			d.item.SkipReason = fmt.Sprintf("it is %s", d.status)
		case d.status == StatusReplayRequested || d.status == StatusReplaying:
			d.item.SkipReason = "a replay of it is already requested"
		case d.replayed && class == replaypolicy.Dedupe:
			d.item.SkipReason = "already replayed (the replay ledger has its message id)"
		case d.item.Subject == "":
			d.item.SkipReason = "no original subject: it cannot be replayed"
		case d.unavailable:
			d.item.SkipReason = "the payload was gone from its stream when it was captured"
		case r.cfg.Subjects.Check(d.item.Subject) != nil:
			d.item.SkipReason = r.cfg.Subjects.Check(d.item.Subject).Error()
		case class == replaypolicy.SameOperation && d.item.OperationID == "":
			d.item.SkipReason = "same_operation: cannot guarantee idempotency without an operation id; reconcile by hand"
		case class == replaypolicy.Revalidate && d.principal == "":
			d.item.SkipReason = "revalidate: no original principal to re-check; reconcile by hand"
		default:
			live++
		}
	}
	var why string
	switch {
	case live > 1 && !k.Bulk:
		why = fmt.Sprintf("%s items cannot be replayed in bulk: request them one at a time", class)
	case live > k.BulkCap && k.BulkCap > 0:
		why = fmt.Sprintf("%s allows at most %d items in one request; this selection has %d", class, k.BulkCap, live)
	}
	if why != "" {
		for i := range items {
			if items[i].item.SkipReason == "" {
				items[i].item.SkipReason = why
			}
		}
	}
}

func (r *Replays) insertDraft(ctx context.Context, tx pgx.Tx, batch, tenant string, class replaypolicy.Class, rate float64,
	actor quarantine.Actor, items []draftItem, meta quarantine.RequestMeta, policyVersion string) error {
	var live []ReplayItem
	skipped := 0
	for i := range items {
		items[i].item.Position = i
		if items[i].item.SkipReason != "" {
			skipped++
		} else {
			live = append(live, items[i].item)
		}
	}
	hash := IntentHash(tenant, class, policyVersion, rate, live)
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO replay_requests (batch, tenant, class, requester_issuer, requester_subject,
        requester_email, policy_version, rate, intent_hash, item_count, skipped_count)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
		batch, tenant, class, actor.Issuer, actor.Subject, actor.Email, policyVersion, rate, hash, len(live), skipped).Scan(&id)
	if err != nil {
		return err
	}
	rows := make([][]any, len(items))
	for i, d := range items {
		hs, err := json.Marshal(d.item.Headers)
		if err != nil {
			return err
		}
		rows[i] = []any{id, d.item.DeadLetterID, d.item.Position, d.item.MsgID, d.item.OperationID, d.item.CorrelationID,
			d.item.Subject, string(hs), d.payload, d.item.PayloadSHA256, d.item.SkipReason}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"replay_items"}, []string{"request_id", "dead_letter_id", "position", "msg_id",
		"operation_id", "correlation_id", "subject", "headers", "payload", "payload_sha256", "skip_reason"}, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	e := audit.NewEvent(actor, meta, "replay.draft")
	e.Tenant, e.ObjectType, e.ObjectID = tenant, "replay_request", fmt.Sprint(id)
	e.After = map[string]any{"class": class, "items": len(live), "skipped": skipped, "intent": hex.EncodeToString(hash), "policy_version": policyVersion}
	_, err = audit.Append(ctx, tx, e)
	return err
}

// IntentHash is SHA-256 over a length-prefixed encoding of everything a
// replay will do: tenant, class, policy version, rate, and per item (in
// order) its dead letter id, message id, operation id, correlation id,
// subject, payload hash and headers. Any change makes another hash.
func IntentHash(tenant string, class replaypolicy.Class, policyVersion string, rate float64, items []ReplayItem) []byte {
	h := sha256.New()
	field := func(h hash.Hash, s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(h, "quarantine-replay-intent-v1")
	field(h, tenant)
	field(h, string(class))
	field(h, policyVersion)
	field(h, fmt.Sprint(math.Float64bits(rate)))
	sorted := append([]ReplayItem(nil), items...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Position < sorted[j].Position })
	for _, it := range sorted {
		field(h, fmt.Sprint(it.DeadLetterID))
		field(h, it.MsgID)
		field(h, it.OperationID)
		field(h, it.CorrelationID)
		field(h, it.Subject)
		field(h, string(it.PayloadSHA256))
		for _, hv := range it.Headers {
			field(h, hv.Name+"\x00"+hv.NameEncoding+"\x00"+hv.Value+"\x00"+hv.Encoding)
		}
		field(h, "end-item")
	}
	return h.Sum(nil)
}

// ReplayHeaders are the headers of a dead letter a replay sends on: the
// original message's own headers, without any Nats-* header (Nats-Rollup,
// Nats-Expected-* and the like must never be forwarded; the message id is
// set by the worker) and without the Dlq-* context headers (the worker sets
// the ones a replay carries).
func ReplayHeaders(hs []HeaderValue) []HeaderValue {
	out := make([]HeaderValue, 0, len(hs))
	for _, h := range hs {
		name := h.Name
		if h.NameEncoding != "" {
			continue // a name that is not text cannot be a header we trust
		}
		lower := strings.ToLower(name)
		if strings.HasPrefix(lower, "nats-") || strings.HasPrefix(lower, "dlq-") {
			continue
		}
		out = append(out, h)
	}
	return out
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}
