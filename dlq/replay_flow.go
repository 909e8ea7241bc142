package dlq

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Answers for what does not exist or is not the caller's to see.
var (
	errNoRequest = quarantine.Errorf(quarantine.ENOTFOUND, "There is no such replay request.")
	errNoBatch   = quarantine.Errorf(quarantine.ENOTFOUND, "There is no such selection.")
	errNoItem    = quarantine.Errorf(quarantine.ENOTFOUND, "There is no such item.")
)

// auditDenied records that actor was refused action on request id of
// tenant (err says why), in a transaction of its own since the attempt's
// rolled back. It returns err, or the failure to audit it.
func (r *Replays) auditDenied(ctx context.Context, actor quarantine.Actor, meta quarantine.RequestMeta, action, tenant string, id int64, err error) error {
	e := audit.NewEvent(actor, meta, action)
	e.Outcome, e.Tenant, e.ObjectType, e.ObjectID, e.Reason = audit.OutcomeDenied, tenant, "replay_request", fmt.Sprint(id), quarantine.ErrorMessage(err)
	if _, aerr := audit.AppendFunc(ctx, r.pool, e); aerr != nil {
		return fmt.Errorf("audit refused %s: %w", action, aerr)
	}
	return err
}

const requestColumns = `id, batch, tenant, class, status, requester_issuer, requester_subject, requester_email,
    reason, status_reason, policy_version, rate, intent_hash, item_count, skipped_count, typed_confirmation,
    payload_edited, created_at, submitted_at, approved_at, finished_at, version`

func scanRequest(row pgx.CollectableRow) (ReplayRequest, error) {
	var r ReplayRequest
	var class, status string
	err := row.Scan(&r.ID, &r.Batch, &r.Tenant, &class, &status, &r.Requester.Issuer, &r.Requester.Subject, &r.Requester.Email,
		&r.Reason, &r.StatusReason, &r.PolicyVersion, &r.Rate, &r.IntentHash, &r.ItemCount, &r.SkippedCount, &r.TypedConfirmation,
		&r.PayloadEdited, &r.CreatedAt, &r.SubmittedAt, &r.ApprovedAt, &r.FinishedAt, &r.Version)
	r.Class, r.Status = replaypolicy.Class(class), ReplayStatus(status)
	return r, err
}

func getRequest(ctx context.Context, q pgx.Tx, id int64, lock bool) (ReplayRequest, error) {
	sql := `SELECT ` + requestColumns + ` FROM replay_requests WHERE id = $1`
	if lock {
		sql += ` FOR UPDATE`
	}
	rows, err := q.Query(ctx, sql, id)
	if err != nil {
		return ReplayRequest{}, err
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRequest)
	if errors.Is(err, pgx.ErrNoRows) {
		return ReplayRequest{}, fmt.Errorf("replay request %d: %w", id, errNoRequest)
	}
	return r, err
}

// Request returns replay request id, or not_found.
func (r *Replays) Request(ctx context.Context, id int64) (ReplayRequest, error) {
	var out ReplayRequest
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		var err error
		out, err = getRequest(ctx, tx, id, false)
		return err
	})
	return out, err
}

// Batch returns the requests made from one selection.
func (r *Replays) Batch(ctx context.Context, batch string) ([]ReplayRequest, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+requestColumns+` FROM replay_requests WHERE batch = $1 ORDER BY id`, batch)
	if err != nil {
		return nil, fmt.Errorf("read replay batch: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanRequest)
	if err == nil && len(out) == 0 {
		return nil, fmt.Errorf("replay batch %q: %w", batch, errNoBatch)
	}
	return out, err
}

// Pending returns requests waiting for approval in tenants (all when all).
func (r *Replays) Pending(ctx context.Context, tenants []string, all bool) ([]ReplayRequest, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+requestColumns+` FROM replay_requests
        WHERE status = 'pending_approval' AND (tenant = ANY($1) OR $2) ORDER BY created_at`, tenants, all)
	if err != nil {
		return nil, fmt.Errorf("read pending replays: %w", err)
	}
	return pgx.CollectRows(rows, scanRequest)
}

// RequestsFor returns the most recent requests that include dead letter id.
func (r *Replays) RequestsFor(ctx context.Context, deadLetterID int64) ([]ReplayRequest, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+requestColumns+` FROM replay_requests
        WHERE id IN (SELECT request_id FROM replay_items WHERE dead_letter_id = $1) AND status <> 'draft'
        ORDER BY id DESC LIMIT 20`, deadLetterID)
	if err != nil {
		return nil, fmt.Errorf("read replays of dead letter %d: %w", deadLetterID, err)
	}
	return pgx.CollectRows(rows, scanRequest)
}

// Items returns up to limit items of a request, in order.
func (r *Replays) Items(ctx context.Context, id int64, limit int) ([]ReplayItem, error) {
	rows, err := r.pool.Query(ctx, `SELECT dead_letter_id, position, msg_id, operation_id, correlation_id, subject,
        headers, payload_sha256, skip_reason FROM replay_items WHERE request_id = $1 ORDER BY position LIMIT $2`, id, limit)
	if err != nil {
		return nil, fmt.Errorf("read replay items: %w", err)
	}
	return pgx.CollectRows(rows, scanItem)
}

func scanItem(row pgx.CollectableRow) (ReplayItem, error) {
	var it ReplayItem
	var hs []byte
	if err := row.Scan(&it.DeadLetterID, &it.Position, &it.MsgID, &it.OperationID, &it.CorrelationID, &it.Subject,
		&hs, &it.PayloadSHA256, &it.SkipReason); err != nil {
		return it, err
	}
	return it, json.Unmarshal(hs, &it.Headers)
}

func liveItems(ctx context.Context, tx pgx.Tx, id int64) ([]ReplayItem, error) {
	rows, err := tx.Query(ctx, `SELECT dead_letter_id, position, msg_id, operation_id, correlation_id, subject,
        headers, payload_sha256, skip_reason FROM replay_items WHERE request_id = $1 AND skip_reason = '' ORDER BY position`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanItem)
}

// Approvals returns the sign-offs of a request.
func (r *Replays) Approvals(ctx context.Context, id int64) ([]ReplayApproval, error) {
	return approvals(ctx, r.pool, id)
}

type rowQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func approvals(ctx context.Context, q rowQuerier, id int64) ([]ReplayApproval, error) {
	rows, err := q.Query(ctx, `SELECT approver_issuer, approver_subject, approver_email, intent_hash, approved_at
        FROM replay_approvals WHERE request_id = $1 ORDER BY approved_at`, id)
	if err != nil {
		return nil, fmt.Errorf("read approvals: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReplayApproval, error) {
		var a ReplayApproval
		err := row.Scan(&a.Approver.Issuer, &a.Approver.Subject, &a.Approver.Email, &a.IntentHash, &a.At)
		return a, err
	})
}

// ReplayProgress counts a request's jobs by state.
type ReplayProgress struct {
	Pending, Published, Duplicate, Skipped, Failed, Unknown, Blocked, Cancelled int
}

// Total is the number of jobs.
func (p ReplayProgress) Total() int {
	return p.Pending + p.Published + p.Skipped + p.Failed + p.Unknown + p.Blocked + p.Cancelled
}

// Progress counts the jobs of a request.
func (r *Replays) Progress(ctx context.Context, id int64) (ReplayProgress, error) {
	rows, err := r.pool.Query(ctx, `SELECT state, duplicate, count(*) FROM replay_jobs WHERE request_id = $1 GROUP BY 1, 2`, id)
	if err != nil {
		return ReplayProgress{}, fmt.Errorf("read replay progress: %w", err)
	}
	var p ReplayProgress
	var state string
	var dup bool
	var n int
	_, err = pgx.ForEachRow(rows, []any{&state, &dup, &n}, func() error {
		switch state {
		case "pending", "claimed":
			p.Pending += n
		case "published":
			p.Published += n
			if dup {
				p.Duplicate += n
			}
		case "skipped":
			p.Skipped += n
		case "failed":
			p.Failed += n
		case "unknown":
			p.Unknown += n
		case "blocked":
			p.Blocked += n
		case "cancelled":
			p.Cancelled += n
		}
		return nil
	})
	return p, err
}

// decisionInput loads what Decide needs about a request's first live item.
const selectDecisionItem = `
SELECT d.item_type, i.msg_id, d.msg_id_derived, i.operation_id, d.principal, i.subject,
       i.payload_sha256, d.payload_sha256, d.status
FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id
WHERE i.request_id = $1 AND i.skip_reason = '' ORDER BY i.position LIMIT 1`

func (r *Replays) decide(ctx context.Context, tx pgx.Tx, req ReplayRequest, actor quarantine.Actor) (replaypolicy.Decision, error) {
	var it replaypolicy.Item
	var itemSHA, origSHA []byte
	err := tx.QueryRow(ctx, selectDecisionItem, req.ID).Scan(&it.ItemType, &it.MsgID, &it.MsgIDDerived, &it.OperationID,
		&it.Principal, &it.OriginalSubject, &itemSHA, &origSHA, &it.Status)
	if errors.Is(err, pgx.ErrNoRows) {
		return replaypolicy.Decision{Class: req.Class, Requirement: replaypolicy.Refused, Reason: "every item of this request was skipped: there is nothing to replay"}, nil
	}
	if err != nil {
		return replaypolicy.Decision{}, err
	}
	it.Tenant = req.Tenant
	it.PayloadSHA256, it.OriginalPayloadSHA256 = hex.EncodeToString(itemSHA), hex.EncodeToString(origSHA)
	as, err := approvals(ctx, tx, req.ID)
	if err != nil {
		return replaypolicy.Decision{}, err
	}
	pr := replaypolicy.Request{
		Items: req.ItemCount, Bulk: req.ItemCount > 1, Requester: req.Requester, Reason: req.Reason,
		PayloadEdited: req.PayloadEdited, IntentHash: req.IntentHex(), TypedConfirmation: req.TypedConfirmation,
		PolicyVersion: req.PolicyVersion, Rate: req.Rate,
	}
	if req.SubmittedAt != nil {
		pr.RequestedAt = *req.SubmittedAt
	}
	for _, a := range as {
		pr.Approvals = append(pr.Approvals, replaypolicy.Approval{Approver: a.Approver, At: a.At, IntentHash: hex.EncodeToString(a.IntentHash)})
	}
	d := replaypolicy.Decide(r.cfg.Policy(), it, actor, pr, r.cfg.Now())
	// The item's own class is what Decide saw; a request is one class by construction.
	return d, nil
}

// Decision says what the request needs now, as seen by actor.
func (r *Replays) Decision(ctx context.Context, id int64, actor quarantine.Actor) (replaypolicy.Decision, error) {
	var d replaypolicy.Decision
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		req, err := getRequest(ctx, tx, id, false)
		if err != nil {
			return err
		}
		d, err = r.decide(ctx, tx, req, actor)
		return err
	})
	return d, err
}

// SubmitInput is what the requester adds to a draft batch.
type SubmitInput struct {
	Reason        string
	Rates         map[int64]float64 // per request; 0 or missing: the class's default
	Confirmations map[int64]string  // typed confirmation per request, where the class needs one
}

// RefusedError lists why requests of a batch cannot be submitted, a
// sentence per request id.
type RefusedError struct {
	Reasons map[int64]string
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(e.Reasons)) {
		fmt.Fprintf(&b, "request %d: %s; ", id, e.Reasons[id])
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// Unwrap makes a RefusedError an invalid quarantine.Error with the same text.
func (e *RefusedError) Unwrap() error { return quarantine.Errorf(quarantine.EINVALID, "%s", e.Error()) }

// Submit turns the actor's draft batch into requests: each one is approved
// at once where the policy needs no approval (its jobs are written in the
// same transaction), or waits for approval. A request whose items were all
// skipped becomes void. Nothing is submitted when any request is refused
// (RefusedError says why).
func (r *Replays) Submit(ctx context.Context, batch string, actor quarantine.Actor, in SubmitInput, meta quarantine.RequestMeta) ([]ReplayRequest, error) {
	in.Reason = strings.TrimSpace(in.Reason)
	var out []ReplayRequest
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+requestColumns+` FROM replay_requests WHERE batch = $1 ORDER BY id FOR UPDATE`, batch)
		if err != nil {
			return err
		}
		reqs, err := pgx.CollectRows(rows, scanRequest)
		if err != nil {
			return err
		}
		if len(reqs) == 0 {
			return fmt.Errorf("replay batch %q: %w", batch, errNoBatch)
		}
		refused := &RefusedError{Reasons: map[int64]string{}}
		table := r.cfg.Policy()
		now := r.cfg.Now()
		for i := range reqs {
			req := &reqs[i]
			if !req.Requester.SameAs(actor) {
				return fmt.Errorf("replay batch %q: %w", batch, errNoBatch) // someone else's draft is not yours to see
			}
			if req.Status != ReplayDraft {
				return quarantine.Errorf(quarantine.ECONFLICT, "this selection was already submitted")
			}
			if req.ItemCount == 0 {
				if err := r.setStatus(ctx, tx, req, ReplayVoid, "every item was skipped: nothing to replay", actor, meta, "replay.void"); err != nil {
					return err
				}
				continue
			}
			rate, err := table.ValidateRate(req.Class, in.Rates[req.ID])
			if err != nil {
				refused.Reasons[req.ID] = err.Error()
				continue
			}
			items, err := liveItems(ctx, tx, req.ID)
			if err != nil {
				return err
			}
			req.Reason, req.Rate, req.TypedConfirmation = in.Reason, rate, strings.TrimSpace(in.Confirmations[req.ID])
			req.IntentHash = IntentHash(req.Tenant, req.Class, req.PolicyVersion, rate, items)
			req.SubmittedAt = &now
			d, err := r.decide(ctx, tx, *req, actor)
			if err != nil {
				return err
			}
			if d.Requirement == replaypolicy.Refused {
				refused.Reasons[req.ID] = d.Reason
				continue
			}
			if d.Confirmation != "" && req.TypedConfirmation != d.Confirmation {
				refused.Reasons[req.ID] = fmt.Sprintf("type %q to confirm", d.Confirmation)
				continue
			}
			if d.Requirement == replaypolicy.Direct && !d.Ready {
				refused.Reasons[req.ID] = d.Reason // e.g. the typed confirmation is missing
				continue
			}
			_, err = tx.Exec(ctx, `UPDATE replay_requests SET reason = $2, rate = $3, typed_confirmation = $4, intent_hash = $5,
                submitted_at = $6, status = 'pending_approval', status_reason = $7, version = version + 1
                WHERE id = $1 AND status = 'draft'`, // only a draft is submitted, once
				req.ID, req.Reason, rate, req.TypedConfirmation, req.IntentHash, now, d.Reason)
			if err != nil {
				return err
			}
			// Items are now spoken for: another request cannot take them.
			if _, err := tx.Exec(ctx, `UPDATE dead_letters d SET status = 'replay_requested', version = d.version + 1, updated_at = now()
                FROM replay_items i WHERE i.request_id = $1 AND i.skip_reason = '' AND d.id = i.dead_letter_id
                AND d.status IN ('quarantined', 'replay_failed')`, req.ID); err != nil { // never re-open discarded or resolved ones
				return err
			}
			req.Status = ReplayPendingApproval
			e := audit.NewEvent(actor, meta, "replay.request")
			e.Tenant, e.ObjectType, e.ObjectID, e.Reason = req.Tenant, "replay_request", fmt.Sprint(req.ID), req.Reason
			e.After = map[string]any{"class": req.Class, "items": req.ItemCount, "intent": req.IntentHex(), "rate": rate, "needs": d.Requirement.String()}
			if err := r.auditItems(ctx, tx, req.ID, e, "replay.item.requested"); err != nil {
				return err
			}
			if d.Ready {
				if err := r.approve(ctx, tx, req, actor, meta, now); err != nil {
					return err
				}
			}
		}
		if len(refused.Reasons) > 0 {
			return refused
		}
		out = reqs
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("submit replay: %w", err)
	}
	return out, nil
}

// approve moves a request to approved and writes its jobs (the outbox) in
// the caller's transaction. Jobs are scheduled at the request's rate, so any
// number of workers together keep to it.
func (r *Replays) approve(ctx context.Context, tx pgx.Tx, req *ReplayRequest, actor quarantine.Actor, meta quarantine.RequestMeta, now time.Time) error {
	tag, err := tx.Exec(ctx, `UPDATE replay_requests SET status = 'approved', approved_at = $2, status_reason = '', version = version + 1
        WHERE id = $1 AND status = 'pending_approval'`, req.ID, now) // approved once, whatever clicks race
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return quarantine.Errorf(quarantine.ECONFLICT, "request %d is no longer waiting for approval", req.ID)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO replay_jobs (request_id, dead_letter_id, not_before)
        SELECT request_id, dead_letter_id,
               $2::timestamptz + make_interval(secs => (row_number() OVER (ORDER BY position) - 1) / $3::double precision)
        FROM replay_items WHERE request_id = $1 AND skip_reason = ''
        ON CONFLICT (request_id, dead_letter_id) DO NOTHING`, req.ID, now, req.Rate); err != nil {
		return err
	}
	req.Status = ReplayApproved
	e := audit.NewEvent(actor, meta, "replay.approved")
	e.Tenant, e.ObjectType, e.ObjectID = req.Tenant, "replay_request", fmt.Sprint(req.ID)
	e.After = map[string]any{"status": ReplayApproved, "intent": req.IntentHex(), "jobs": req.ItemCount}
	_, err = audit.Append(ctx, tx, e)
	return err
}

// ApproveInput is what an approver sends: the intent they reviewed and,
// for classes with typed confirmation, what they typed.
type ApproveInput struct {
	IntentHex    string
	Confirmation string
}

// Approve records actor's approval of the exact intent they reviewed. It
// returns forbidden for the requester (also audited as denied), a
// conflict when the request is not waiting for approval, its intent
// changed, or the actor already approved, invalid for a missing typed
// confirmation. The approval that completes the requirement approves the
// request and writes its jobs in the same transaction.
func (r *Replays) Approve(ctx context.Context, id int64, actor quarantine.Actor, in ApproveInput, meta quarantine.RequestMeta) (replaypolicy.Decision, error) {
	var d replaypolicy.Decision
	var denied string // the tenant of a request the actor may not approve
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		req, err := getRequest(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if req.Requester.SameAs(actor) {
			denied = req.Tenant
			return quarantine.Errorf(quarantine.EFORBIDDEN, "you cannot approve your own request")
		}
		if req.Status != ReplayPendingApproval {
			return quarantine.Errorf(quarantine.ECONFLICT, "the request is %s, not waiting for approval", strings.ReplaceAll(string(req.Status), "_", " "))
		}
		if !strings.EqualFold(strings.TrimSpace(in.IntentHex), req.IntentHex()) {
			return quarantine.Errorf(quarantine.ECONFLICT, "the request changed since you reviewed it; review it again")
		}
		before, err := r.decide(ctx, tx, req, actor)
		if err != nil {
			return err
		}
		if before.Requirement == replaypolicy.Refused {
			return quarantine.Errorf(quarantine.ECONFLICT, "%s", before.Reason)
		}
		if before.Confirmation != "" && strings.TrimSpace(in.Confirmation) != before.Confirmation {
			return quarantine.Errorf(quarantine.EINVALID, "type %q to confirm", before.Confirmation)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO replay_approvals (request_id, approver_issuer, approver_subject, approver_email, intent_hash, approved_at)
            VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, req.ID, actor.Issuer, actor.Subject, actor.Email, req.IntentHash, r.cfg.Now())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return quarantine.Errorf(quarantine.ECONFLICT, "you already approved this request")
		}
		if d, err = r.decide(ctx, tx, req, actor); err != nil {
			return err
		}
		e := audit.NewEvent(actor, meta, "replay.approve")
		e.Tenant, e.ObjectType, e.ObjectID = req.Tenant, "replay_request", fmt.Sprint(req.ID)
		e.After = map[string]any{"intent": req.IntentHex(), "approvals": d.ApprovalsHave, "needed": d.ApprovalsNeeded}
		if err := r.auditItems(ctx, tx, req.ID, e, "replay.item.approved"); err != nil {
			return err
		}
		if d.Ready {
			return r.approve(ctx, tx, &req, actor, meta, r.cfg.Now())
		}
		return nil
	})
	if denied != "" {
		err = r.auditDenied(ctx, actor, meta, "replay.approve", denied, id, err)
	}
	if err != nil {
		return d, fmt.Errorf("approve replay %d: %w", id, err)
	}
	return d, nil
}

// Reject closes a request waiting for approval, with a reason; its dead
// letters go back to quarantined.
func (r *Replays) Reject(ctx context.Context, id int64, actor quarantine.Actor, reason string, meta quarantine.RequestMeta) error {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return fmt.Errorf("reject replay %d: %w", id, quarantine.Errorf(quarantine.EINVALID, "a reason is required"))
	}
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		req, err := getRequest(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if req.Status != ReplayPendingApproval {
			return quarantine.Errorf(quarantine.ECONFLICT, "the request is %s", req.Status)
		}
		return r.close(ctx, tx, &req, ReplayRejected, reason, actor, meta, "replay.reject")
	})
	if err != nil {
		return fmt.Errorf("reject replay %d: %w", id, err)
	}
	return nil
}

// Cancel stops the requester's own request: nothing not yet published will
// be. Workers check the request before every publish.
func (r *Replays) Cancel(ctx context.Context, id int64, actor quarantine.Actor, reason string, meta quarantine.RequestMeta) error {
	var denied string // the tenant of a request the actor may not cancel
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		req, err := getRequest(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if !req.Requester.SameAs(actor) {
			denied = req.Tenant
			return quarantine.Errorf(quarantine.EFORBIDDEN, "only the requester can cancel a request")
		}
		if !req.Status.Open() {
			return quarantine.Errorf(quarantine.ECONFLICT, "the request is already %s", req.Status)
		}
		// Jobs a worker holds right now are left to it: it re-checks the
		// request before publishing, and records honestly what it did publish.
		if _, err := tx.Exec(ctx, `UPDATE replay_jobs SET state = 'cancelled', updated_at = now(),
            result = CASE WHEN state = 'unknown' THEN 'cancelled by the requester; the last attempt''s outcome is unknown (PubAck lost)'
                          ELSE 'cancelled by the requester' END
            WHERE request_id = $1 AND state IN ('pending', 'unknown')`, id); err != nil { // published ones stay published
			return err
		}
		return r.close(ctx, tx, &req, ReplayCancelled, strings.TrimSpace(reason), actor, meta, "replay.cancel")
	})
	if denied != "" {
		err = r.auditDenied(ctx, actor, meta, "replay.cancel", denied, id, err)
	}
	if err != nil {
		return fmt.Errorf("cancel replay %d: %w", id, err)
	}
	return nil
}

// close ends a request and returns its unpublished dead letters to
// quarantined.
func (r *Replays) close(ctx context.Context, tx pgx.Tx, req *ReplayRequest, to ReplayStatus, reason string, actor quarantine.Actor, meta quarantine.RequestMeta, action string) error {
	if _, err := tx.Exec(ctx, `UPDATE dead_letters d SET status = 'quarantined', version = d.version + 1, updated_at = now()
        FROM replay_items i WHERE i.request_id = $1 AND d.id = i.dead_letter_id AND i.skip_reason = ''
        AND d.status = 'replay_requested'
        AND NOT EXISTS (SELECT 1 FROM replay_jobs j WHERE j.request_id = $1 AND j.dead_letter_id = d.id AND j.state = 'published')`, req.ID); err != nil {
		return err
	}
	return r.setStatus(ctx, tx, req, to, reason, actor, meta, action)
}

func (r *Replays) setStatus(ctx context.Context, tx pgx.Tx, req *ReplayRequest, to ReplayStatus, reason string, actor quarantine.Actor, meta quarantine.RequestMeta, action string) error {
	if _, err := tx.Exec(ctx, `UPDATE replay_requests SET status = $2, status_reason = $3, version = version + 1,
        finished_at = CASE WHEN $2 IN ('done', 'rejected', 'cancelled', 'void') THEN now() ELSE finished_at END
        WHERE id = $1`, req.ID, to, reason); err != nil {
		return err
	}
	e := audit.NewEvent(actor, meta, action)
	e.Tenant, e.ObjectType, e.ObjectID, e.Reason = req.Tenant, "replay_request", fmt.Sprint(req.ID), reason
	e.Before, e.After = map[string]any{"status": req.Status}, map[string]any{"status": to}
	req.Status = to
	return r.auditItems(ctx, tx, req.ID, e, "")
}

// auditItems appends e for the request and, when itemAction is set, one row
// per live item naming its message and operation id, so an auditor finds
// every step of an item's replay by message id.
func (r *Replays) auditItems(ctx context.Context, tx pgx.Tx, requestID int64, e audit.Event, itemAction string) error {
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
	events := make([]audit.Event, len(items))
	for i, it := range items {
		ie := e
		ie.Action, ie.ObjectType, ie.ObjectID = itemAction, "dead_letter", fmt.Sprint(it.DeadLetterID)
		ie.MessageID, ie.OperationID = it.MsgID, it.OperationID
		ie.Before = nil
		ie.After = map[string]any{"request": requestID, "subject": it.Subject, "payload_sha256": hex.EncodeToString(it.PayloadSHA256)}
		events[i] = ie
	}
	_, err = audit.AppendBatch(ctx, tx, events)
	return err
}

// EditPayload replaces the payload of one item of the requester's request
// before it runs, where the class allows it (never same_operation). The
// original message id is kept; the intent changes, so earlier approvals no
// longer count and the request needs approving again.
func (r *Replays) EditPayload(ctx context.Context, id, deadLetterID int64, actor quarantine.Actor, payload []byte, meta quarantine.RequestMeta) error {
	var denied string // the tenant of a request the actor may not edit
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		req, err := getRequest(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if !req.Requester.SameAs(actor) {
			denied = req.Tenant
			return quarantine.Errorf(quarantine.EFORBIDDEN, "only the requester can edit a request")
		}
		if req.Class == replaypolicy.SameOperation {
			denied = req.Tenant
			return quarantine.Errorf(quarantine.EFORBIDDEN, "same_operation payloads cannot be edited: the operation must be repeated exactly")
		}
		if req.Status != ReplayDraft && req.Status != ReplayPendingApproval {
			return quarantine.Errorf(quarantine.ECONFLICT, "the request is %s; only a request not yet approved can be edited", req.Status)
		}
		sum := sha256.Sum256(payload)
		var old []byte
		err = tx.QueryRow(ctx, `UPDATE replay_items SET payload = $3, payload_sha256 = $4
            WHERE request_id = $1 AND dead_letter_id = $2 AND skip_reason = ''
            RETURNING (SELECT payload_sha256 FROM replay_items WHERE request_id = $1 AND dead_letter_id = $2)`,
			id, deadLetterID, payload, sum[:]).Scan(&old)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("item %d of request %d: %w", deadLetterID, id, errNoItem)
		}
		if err != nil {
			return err
		}
		items, err := liveItems(ctx, tx, id)
		if err != nil {
			return err
		}
		hash := IntentHash(req.Tenant, req.Class, req.PolicyVersion, req.Rate, items)
		if _, err := tx.Exec(ctx, `DELETE FROM replay_approvals WHERE request_id = $1`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE replay_requests SET payload_edited = true, intent_hash = $2, version = version + 1 WHERE id = $1`, id, hash); err != nil {
			return err
		}
		e := audit.NewEvent(actor, meta, "replay.edit_payload")
		e.Tenant, e.ObjectType, e.ObjectID = req.Tenant, "dead_letter", fmt.Sprint(deadLetterID)
		e.Before = map[string]any{"payload_sha256": hex.EncodeToString(old), "intent": req.IntentHex()}
		e.After = map[string]any{"payload_sha256": hex.EncodeToString(sum[:]), "intent": hex.EncodeToString(hash), "request": id}
		if bytes.Equal(old, sum[:]) {
			e.Reason = "payload unchanged"
		}
		_, err = audit.Append(ctx, tx, e)
		return err
	})
	if denied != "" {
		err = r.auditDenied(ctx, actor, meta, "replay.edit_payload", denied, id, err)
	}
	if err != nil {
		return fmt.Errorf("edit payload of replay %d: %w", id, err)
	}
	return nil
}

// VoidStale voids drafts and requests waiting for approval that were made
// under another policy version: their approvals no longer count. It returns
// how many it voided.
func (r *Replays) VoidStale(ctx context.Context, version string) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+requestColumns+` FROM replay_requests
            WHERE status IN ('draft', 'pending_approval') AND policy_version <> $1 FOR UPDATE`, version)
		if err != nil {
			return err
		}
		reqs, err := pgx.CollectRows(rows, scanRequest)
		if err != nil {
			return err
		}
		for i := range reqs {
			if err := r.close(ctx, tx, &reqs[i], ReplayVoid, "the replay policy changed since this request was made; request again",
				quarantine.Actor{}, quarantine.RequestMeta{}, "replay.void"); err != nil {
				return err
			}
		}
		n = len(reqs)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("void stale replay requests: %w", err)
	}
	return n, nil
}

// ConfirmationFor returns what the requester (and approvers) must type to
// confirm request id, or "" when its class needs no typed confirmation.
func (r *Replays) ConfirmationFor(ctx context.Context, id int64) (string, error) {
	req, err := r.Request(ctx, id)
	if err != nil {
		return "", err
	}
	k, _ := r.cfg.Policy().Knobs(req.Class)
	if !k.TypedConfirmation || req.ItemCount == 0 {
		return "", nil
	}
	var msgID string
	if err := r.pool.QueryRow(ctx, `SELECT msg_id FROM replay_items WHERE request_id = $1 AND skip_reason = '' ORDER BY position LIMIT 1`, id).Scan(&msgID); err != nil {
		return "", fmt.Errorf("confirmation for replay %d: %w", id, err)
	}
	return replaypolicy.ConfirmationPhrase(replaypolicy.Item{MsgID: msgID}, replaypolicy.Request{Items: req.ItemCount, Bulk: req.ItemCount > 1}), nil
}

// ItemPayload returns the payload a request will send for one of its items.
func (r *Replays) ItemPayload(ctx context.Context, id, deadLetterID int64) ([]byte, error) {
	var p []byte
	err := r.pool.QueryRow(ctx, `SELECT payload FROM replay_items WHERE request_id = $1 AND dead_letter_id = $2 AND skip_reason = ''`,
		id, deadLetterID).Scan(&p)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("item %d of replay %d: %w", deadLetterID, id, errNoItem)
	}
	if err != nil {
		return nil, fmt.Errorf("item %d of replay %d: %w", deadLetterID, id, err)
	}
	return p, nil
}
