package replay

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// SubmitInput is what the requester adds to a draft batch.
type SubmitInput struct {
	Reason        string
	Rates         map[int64]float64 // per request; 0 or missing: the class's default
	Confirmations map[int64]string  // typed confirmation per request, where the class needs one
}

// RefusedError lists why requests of a batch cannot be submitted, a
// sentence per request id. It is an invalid quarantine.Error.
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

const (
	selectBatchLocked = selectBatch + ` FOR UPDATE` // one submit of a batch at a time
	submitRequest     = `UPDATE replay_requests SET reason = $2, rate = $3, typed_confirmation = $4, intent_hash = $5,
        submitted_at = $6, status = 'pending_approval', status_reason = $7, version = version + 1
        WHERE id = $1 AND status = 'draft'` // only a draft is submitted, once
	// Items are now spoken for: another request cannot take them.
	requestItemsOf = `UPDATE dead_letters d SET status = 'replay_requested', version = d.version + 1, updated_at = now()
        FROM replay_items i WHERE i.request_id = $1 AND i.skip_reason = '' AND d.id = i.dead_letter_id
        AND d.status IN ('quarantined', 'replay_failed')` // never re-open discarded or resolved ones
	approveRequest = `UPDATE replay_requests SET status = 'approved', approved_at = $2, status_reason = '', version = version + 1
        WHERE id = $1 AND status = 'pending_approval'` // approved once, whatever clicks race
	// The outbox: one job per live item, scheduled at the request's rate so
	// that any number of workers together keep to it.
	insertJobs = `INSERT INTO replay_jobs (request_id, dead_letter_id, not_before)
        SELECT request_id, dead_letter_id,
               $2::timestamptz + make_interval(secs => (row_number() OVER (ORDER BY position) - 1) / $3::double precision)
        FROM replay_items WHERE request_id = $1 AND skip_reason = ''
        ON CONFLICT (request_id, dead_letter_id) DO NOTHING` // a job is written once
)

// Submit turns the actor's draft batch into requests: each one is approved
// at once where the policy needs no approval (its jobs are written in the
// same transaction), or waits for approval. A request the rules find
// nothing to replay in becomes void. Nothing is submitted when any request
// is refused (RefusedError says why). Someone else's batch is not found.
func (s *Service) Submit(ctx context.Context, batch string, actor quarantine.Actor, in SubmitInput, meta quarantine.RequestMeta) ([]Request, error) {
	in.Reason = strings.TrimSpace(in.Reason)
	var out []Request
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		reqs, err := batchRequests(ctx, tx, selectBatchLocked, batch)
		if err != nil {
			return err
		}
		refused := &RefusedError{Reasons: map[int64]string{}}
		table := s.cfg.Policy()
		now := s.cfg.Now()
		for i := range reqs {
			req := &reqs[i]
			if v := replaypolicy.MaySubmit(req.Requester, actor); v.Outcome != replaypolicy.Go {
				return fmt.Errorf("replay batch %q: %w", batch, errNoBatch) // someone else's draft is not yours to see
			}
			if req.Status != StatusDraft {
				return quarantine.Errorf(quarantine.ECONFLICT, "this selection was already submitted")
			}
			items, err := s.requestFacts(ctx, tx, *req)
			if err != nil {
				return err
			}
			req.Reason, req.Rate, req.TypedConfirmation = in.Reason, in.Rates[req.ID], strings.TrimSpace(in.Confirmations[req.ID])
			req.SubmittedAt = &now
			d, voided, err := s.submitOne(ctx, tx, req, table, items, actor, meta)
			if err != nil {
				return err
			}
			if voided {
				continue
			}
			if v := replaypolicy.SubmitVerdict(d, req.TypedConfirmation); v.Outcome != replaypolicy.Go {
				refused.Reasons[req.ID] = v.Reason
				continue
			}
			if err := s.request(ctx, tx, req, d, actor, meta); err != nil {
				return err
			}
			if d.Ready {
				if err := s.approve(ctx, tx, req, actor, meta, now); err != nil {
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

// submitOne applies the rules to one request of a batch being submitted:
// its items, then the request's terms, which fix its rate and so its intent
// hash, then what it needs. A request the rules find nothing to replay in
// is voided here (voided true).
func (s *Service) submitOne(ctx context.Context, tx pgx.Tx, req *Request, table *replaypolicy.Table, items []replaypolicy.Item,
	actor quarantine.Actor, meta quarantine.RequestMeta) (d replaypolicy.Decision, voided bool, err error) {
	verdicts := make([]replaypolicy.Verdict, len(items))
	for i, it := range items {
		verdicts[i] = replaypolicy.JudgeItem(table, it, replaypolicy.AtRequest)
	}
	terms, v := replaypolicy.JudgeRequest(table, verdicts, policyRequest(*req, nil))
	switch v.Outcome {
	case replaypolicy.Go:
	case replaypolicy.Done:
		return v.Decision(table), true, s.setStatus(ctx, tx, req, StatusVoid, v.Reason, actor, meta, "replay.void")
	default:
		return v.Decision(table), false, nil
	}
	live, err := liveItems(ctx, tx, req.ID)
	if err != nil {
		return replaypolicy.Decision{}, false, err
	}
	req.Rate = terms.Rate
	req.IntentHash = IntentHash(req.Tenant, req.Class, req.PolicyVersion, req.Rate, live)
	return replaypolicy.Require(terms, actor, policyRequest(*req, nil), s.cfg.Now()), false, nil
}

// request moves a submitted draft to pending_approval, marks its items
// requested and audits it, with one row per item.
func (s *Service) request(ctx context.Context, tx pgx.Tx, req *Request, d replaypolicy.Decision, actor quarantine.Actor, meta quarantine.RequestMeta) error {
	tag, err := tx.Exec(ctx, submitRequest, req.ID, req.Reason, req.Rate, req.TypedConfirmation, req.IntentHash, *req.SubmittedAt, d.Reason)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return quarantine.Errorf(quarantine.ECONFLICT, "this selection was already submitted")
	}
	if _, err := tx.Exec(ctx, requestItemsOf, req.ID); err != nil {
		return err
	}
	req.Status = StatusPendingApproval
	e := requestEvent(actor, meta, "replay.request", req)
	e.Reason = req.Reason
	e.After = map[string]any{"class": req.Class, "items": req.ItemCount, "intent": req.IntentHex(), "rate": req.Rate, "needs": d.Requirement.String()}
	return auditItems(ctx, tx, req.ID, e, "replay.item.requested")
}

// approve moves a request to approved and writes its jobs (the outbox) in
// the caller's transaction.
func (s *Service) approve(ctx context.Context, tx pgx.Tx, req *Request, actor quarantine.Actor, meta quarantine.RequestMeta, now time.Time) error {
	tag, err := tx.Exec(ctx, approveRequest, req.ID, now)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return quarantine.Errorf(quarantine.ECONFLICT, "request %d is no longer waiting for approval", req.ID)
	}
	if _, err := tx.Exec(ctx, insertJobs, req.ID, now, req.Rate); err != nil {
		return err
	}
	req.Status = StatusApproved
	e := requestEvent(actor, meta, "replay.approved", req)
	e.After = map[string]any{"status": StatusApproved, "intent": req.IntentHex(), "jobs": req.ItemCount}
	return auditItems(ctx, tx, req.ID, e, "")
}
