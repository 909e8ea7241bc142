package replay

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// MaxSelection bounds how many dead letters one selection may name.
const MaxSelection = 100_000

// ErrEmptySelection is returned when a selection names no dead letter the
// actor may see.
var ErrEmptySelection = quarantine.Errorf(quarantine.EINVALID, "the selection holds no dead letter you may replay")

// CanRequest says whether the actor may request replays of class in tenant.
type CanRequest func(tenant string, class replaypolicy.Class) bool

// MatchingIDs resolves a list filter, at this moment, to the ids of the
// dead letters it selects (newest first), at most limit of them. It returns
// an invalid quarantine.Error when the filter selects more: a bulk action
// works on an exact, frozen set, never on "whatever matches later".
func MatchingIDs(ctx context.Context, store *dlq.Store, f dlq.ListFilter, limit int) ([]int64, error) {
	f.Before, f.After = "", ""
	var ids []int64
	for {
		page, err := store.ListDeadLetters(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("resolve selection: %w", err)
		}
		for _, it := range page.Items {
			ids = append(ids, it.ID)
		}
		if len(ids) > limit {
			return nil, quarantine.Errorf(quarantine.EINVALID, "the filter selects more than %d dead letters; narrow it", limit)
		}
		if page.Next == "" {
			return ids, nil
		}
		f.Before = page.Next
	}
}

// The dead letters of a selection the actor may see (their tenants), with
// what the rules judge and what a replay would send.
const selectForDraft = `
SELECT d.id, d.tenant, d.item_type, d.original_subject, d.msg_id, d.msg_id_derived, d.operation_id,
       d.correlation_id, d.principal, d.headers, d.payload, d.payload_sha256, d.payload_unavailable, d.status,
       EXISTS (SELECT 1 FROM replay_ledger l WHERE l.tenant = d.tenant AND l.msg_id = d.msg_id AND l.class = 'dedupe') AS replayed
FROM dead_letters d
WHERE d.id = ANY($1) AND (d.tenant = ANY($2) OR $3)
ORDER BY d.id`

const insertRequest = `INSERT INTO replay_requests (batch, tenant, class, requester_issuer, requester_subject,
    requester_email, requester_email_verified, policy_version, rate, intent_hash, item_count, skipped_count)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`

// draftItem is one dead letter of a selection: the item as it will be
// sent, its payload and the rules' verdict.
type draftItem struct {
	item    Item
	payload []byte
	verdict replaypolicy.Verdict
}

// CreateDrafts freezes a selection: the dead letters ids names (only those
// in tenants; all tenants when allTenants) become draft requests, one per
// tenant and policy class, each with its items, the headers and payload that
// will be sent, the reason of each item the rules leave out, and its intent
// hash. Later arrivals are never added. It returns the batch token.
func (s *Service) CreateDrafts(ctx context.Context, actor quarantine.Actor, ids []int64, tenants []string, allTenants bool,
	can CanRequest, meta quarantine.RequestMeta) (string, error) {
	if len(ids) == 0 {
		return "", ErrEmptySelection
	}
	if len(ids) > MaxSelection {
		return "", quarantine.Errorf(quarantine.EINVALID, "a selection may hold at most %d dead letters, this one holds %d", MaxSelection, len(ids))
	}
	table := s.cfg.Policy()
	batch := randomID()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		type key struct {
			tenant string
			class  replaypolicy.Class
		}
		groups := map[key][]draftItem{}
		var order []key
		rows, err := tx.Query(ctx, selectForDraft, ids, tenants, allTenants)
		if err != nil {
			return err
		}
		var d draftItem
		var f facts
		var headers []byte
		_, err = pgx.ForEachRow(rows, []any{&d.item.DeadLetterID, &f.tenant, &f.itemType, &f.subject, &f.msgID, &f.msgIDDerived,
			&f.operationID, &d.item.CorrelationID, &f.principal, &headers, &d.payload, &f.payloadSHA256, &f.payloadUnavailable,
			&f.status, &f.alreadyReplayed}, func() error {
			var hs []dlq.HeaderValue
			if err := json.Unmarshal(headers, &hs); err != nil {
				return fmt.Errorf("headers of dead letter %d: %w", d.item.DeadLetterID, err)
			}
			f.originalSHA256 = f.payloadSHA256 // nothing is edited yet
			d.item.Subject, d.item.MsgID, d.item.OperationID, d.item.PayloadSHA256 = f.subject, f.msgID, f.operationID, f.payloadSHA256
			d.item.Headers = Headers(hs)
			d.verdict = replaypolicy.JudgeItem(table, f.item(s.cfg.Subjects), replaypolicy.AtDraft)
			k := key{f.tenant, d.verdict.Class}
			if _, seen := groups[k]; !seen {
				order = append(order, k)
			}
			groups[k] = append(groups[k], d)
			d, f = draftItem{}, facts{}
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
			verdicts := make([]replaypolicy.Verdict, len(items))
			for i, it := range items {
				verdicts[i] = it.verdict
			}
			for i, v := range replaypolicy.JudgeDraft(table, k.class, k.tenant, can(k.tenant, k.class), verdicts) {
				if v.Outcome != replaypolicy.Go {
					items[i].item.SkipReason = v.Reason
				}
			}
			if err := s.insertDraft(ctx, tx, batch, k.tenant, k.class, actor, items, meta, table); err != nil {
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

// insertDraft writes one draft request of items (every item, with the
// reason of those left out) and audits it.
func (s *Service) insertDraft(ctx context.Context, tx pgx.Tx, batch, tenant string, class replaypolicy.Class,
	actor quarantine.Actor, items []draftItem, meta quarantine.RequestMeta, table *replaypolicy.Table) error {
	knobs, _ := table.Knobs(class)
	var live []Item
	skipped := 0
	for i := range items {
		items[i].item.Position = i
		if items[i].item.SkipReason != "" {
			skipped++
		} else {
			live = append(live, items[i].item)
		}
	}
	hash := IntentHash(tenant, class, table.Version(), knobs.DefaultRate, live)
	req := Request{Tenant: tenant, Class: class, Status: StatusDraft}
	if err := tx.QueryRow(ctx, insertRequest, batch, tenant, class, actor.Issuer, actor.Subject, actor.Email, actor.EmailVerified, table.Version(),
		knobs.DefaultRate, hash, len(live), skipped).Scan(&req.ID); err != nil {
		return err
	}
	rows := make([][]any, len(items))
	for i, d := range items {
		hs, err := json.Marshal(d.item.Headers)
		if err != nil {
			return err
		}
		rows[i] = []any{req.ID, d.item.DeadLetterID, d.item.Position, d.item.MsgID, d.item.OperationID, d.item.CorrelationID,
			d.item.Subject, string(hs), d.payload, d.item.PayloadSHA256, d.item.SkipReason}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"replay_items"}, []string{"request_id", "dead_letter_id", "position", "msg_id",
		"operation_id", "correlation_id", "subject", "headers", "payload", "payload_sha256", "skip_reason"}, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	e := requestEvent(actor, meta, "replay.draft", &req)
	e.After = map[string]any{"class": class, "items": len(live), "skipped": skipped, "intent": hex.EncodeToString(hash), "policy_version": table.Version()}
	_, err := audit.Append(ctx, tx, e)
	return err
}
