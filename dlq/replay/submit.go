package replay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// SubmitInput is what the requester adds to a draft batch.
type SubmitInput struct {
	Reason string
	// ReconciliationNote is what the requester checked, and the evidence,
	// for requests holding items whose error class needs reconciliation
	// first (unknown_effect); it is kept only on those.
	ReconciliationNote string
	Rates              map[int64]float64 // per request; missing: the class's default; at least replaypolicy.MinRate (0 is refused)
	Confirmations      map[int64]string  // typed confirmation per request, where the class needs one
}

// MaxReconciliationNoteBytes bounds a reconciliation note. The intent
// hash covers the note and the request's audit row holds it, whole: the
// audit log cuts JSON past 32 KiB, and a note this long stays under that
// however many of its characters JSON escapes.
const MaxReconciliationNoteBytes = 4096

// RefusedError lists why requests of a batch cannot be submitted, a
// sentence per request id. It is an invalid quarantine.Error.
type RefusedError struct {
	Reasons map[int64]string
	// Voided are the drafts the submit voided because nothing of them was
	// left to replay (every draft of the batch had its last items left
	// out, each held by another open request): each with the open request that holds all it had left (0: no
	// one request does), and whether that request is the submitter's own.
	Voided map[int64]HeldElsewhere
}

// HeldElsewhere is the open request that holds every item a voided draft
// had left (RefusedError.Voided): By (0: none does alone), and Yours when
// the submitter requested it (another tab's submit of the same selection).
type HeldElsewhere struct {
	By    int64
	Yours bool
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
	selectBatchLocked = selectBatch + ` FOR UPDATE OF r` // one submit of a batch at a time
	submitRequest     = `UPDATE replay_requests SET reason = $2, rate = $3, typed_confirmation = $4, intent_hash = $5,
        submitted_at = $6, status = 'pending_approval', status_reason = $7, reconciliation_note = $9, approvals_needed = $10,
        classes = coalesce($11::text[], '{}'), version = version + 1
        WHERE id = $1 AND status = 'draft' -- only a draft is submitted, once
          AND ($8::timestamptz IS NULL OR created_at > $8) -- and only while it has not expired
        RETURNING version`
	// The request's live items take their dead letters: the unique index
	// replay_items_one_open_request refuses one another open request holds.
	holdItems = `UPDATE replay_items SET held = true WHERE request_id = $1 AND skip_reason = ''`
	// Who holds a dead letter this request wanted, to name them and say
	// what frees it (where they stand, of which tenant).
	selectHolder = `SELECT h.request_id, h.dead_letter_id, r.status, r.tenant FROM replay_items i
        JOIN replay_items h ON h.dead_letter_id = i.dead_letter_id AND h.held AND h.request_id <> i.request_id
        JOIN replay_requests r ON r.id = h.request_id
        WHERE i.request_id = $1 AND i.skip_reason = '' LIMIT 1`
	// Dated as its approvals are: by the console's clock, never after the
	// database's (insertApproval, judgedAt).
	approveRequest = `UPDATE replay_requests SET status = 'approved', approved_at = least($2::timestamptz, now()), status_reason = '',
        policy_activated_at = (SELECT v.activated_at FROM replay_policy_versions v WHERE v.version = replay_requests.policy_version),
        version = version + 1
        WHERE id = $1 AND status = 'pending_approval' -- approved once, whatever clicks race
        RETURNING version`
	// The outbox: one job per item that holds its dead letter, scheduled
	// at the request's rate so that any number of workers together keep to
	// it, with the bytes publishing it reads (its payload, the edited one
	// else the dead letter's, and its headers as text), which a claim sums
	// against its budget: both are frozen from here on (only a request not
	// yet approved is edited). The dead letter's size is read by its key,
	// and only for an item not edited.
	insertJobs = `INSERT INTO replay_jobs (request_id, dead_letter_id, dead_lettered_at, not_before, bytes)
        SELECT i.request_id, i.dead_letter_id, i.dead_lettered_at,
               $2::timestamptz + make_interval(secs => (row_number() OVER (ORDER BY i.position) - 1) / $3::double precision),
               coalesce(octet_length(i.payload), (SELECT d.payload_size FROM dead_letters d
                   WHERE d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at), 0) + octet_length(i.headers::text)
        FROM replay_items i WHERE i.request_id = $1 AND i.skip_reason = '' AND i.held -- only what this request holds
        ON CONFLICT (request_id, dead_letter_id) DO NOTHING` // a job is written once
	// An item the rules now leave out, with why.
	leaveOut = `UPDATE replay_items SET skip_reason = $3, verdict = $4, verdict_check = $5
        WHERE request_id = $1 AND dead_letter_id = $2 AND skip_reason = ''` // only a live item changes
	// Submit locks the dead letters of every live item of the batch first,
	// by key, before it writes anything (left-out items, holds, statuses,
	// audit): the order Close and every other statement changing several
	// dead letters take them in, so a submit and a discard of overlapping
	// dead letters wait for each other instead of deadlocking. Whatever
	// their status: the judging that follows sees them as they stay.
	lockBatchDeadLetters = `SELECT d.id FROM replay_items i
        JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
        WHERE i.request_id = ANY($1) AND i.skip_reason = '' -- the live items of the batch's requests
        ORDER BY d.id, d.dead_lettered_at
        FOR UPDATE OF d`
	setCounts = `UPDATE replay_requests SET item_count = $2, skipped_count = skipped_count + $3, intent_hash = $4, version = version + 1
        WHERE id = $1 AND status = 'draft'`
)

// Items are now spoken for: the dead letters of the live items of requests
// $1 are replay_requested (and the counters follow: dlq.StatusMove), in one
// statement, so the counter rows are taken in their order.
var requestItemsOf = dlq.StatusMove(`
    SELECT d.id, d.dead_lettered_at, d.status
    FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
    WHERE i.request_id = ANY($1) AND i.skip_reason = ''
      AND d.status IN ('quarantined', 'replay_failed') -- never re-open discarded or resolved ones
    ORDER BY d.id, d.dead_lettered_at
    FOR UPDATE OF d`, `'replay_requested'`, "id")

// Submit turns the actor's draft batch into requests: each one is approved
// at once where the policy needs no approval (its jobs are written in the
// same transaction), or waits for approval. Every item is judged again as
// it stands: when one no longer may go (discarded, replayed, taken by
// another request since the draft), it is left out with why, the draft
// keeps that, and the submit is refused (RefusedError) so the requester
// reviews what is now going. A request the rules find nothing to replay in
// becomes void. Nothing is submitted when any request is refused. The
// items' dead letters are held by the request (at most one open request
// per dead letter); a conflict names the request that holds one. Someone
// else's batch is not found (audited as denied), and so is an expired one.
func (s *Service) Submit(ctx context.Context, batch string, actor quarantine.Actor, in SubmitInput, meta quarantine.RequestMeta) ([]Request, error) {
	in.Reason, in.ReconciliationNote = strings.TrimSpace(in.Reason), strings.TrimSpace(in.ReconciliationNote)
	if n := len(in.ReconciliationNote); n > MaxReconciliationNoteBytes {
		return nil, fmt.Errorf("submit replay: %w", quarantine.Errorf(quarantine.EINVALID,
			"the reconciliation note is %d bytes, over the %d it may hold: say what you checked briefly and link the evidence", n, MaxReconciliationNoteBytes))
	}
	for id, rate := range in.Rates {
		if v := replaypolicy.JudgeRateInput(rate); v.Outcome != replaypolicy.Go {
			return nil, fmt.Errorf("submit replay: request %d: %w", id, refuse(v, quarantine.EINVALID))
		}
	}
	var out []Request
	var changed *RefusedError // items left out since the draft: kept, and the submit refused
	var denied []string       // the tenants of a batch that is not the actor's
	tctx, jctx, cancel := judging(ctx)
	defer cancel()
	err := dlq.InTx(tctx, s.pool, func(tx pgx.Tx) error {
		out, changed, denied = nil, nil, nil // a run again starts afresh
		reqs, err := batchRequests(jctx, tx, selectBatchLocked, batch)
		if err != nil {
			return err
		}
		for _, req := range reqs {
			if v := replaypolicy.MaySubmit(req.Requester, actor); v.Outcome != replaypolicy.Go {
				// Someone else's draft is not yours to see; the refusal is
				// one row in each tenant of the batch.
				denied = requestTenants(reqs)
				return fmt.Errorf("replay batch %q: %w", batch, errNoBatch)
			}
		}
		if err := ctx.Err(); err != nil {
			return err // judged, and not refused: a client that left changes nothing
		}
		if err := lockDeadLetters(ctx, tx, reqs); err != nil {
			return err
		}
		table, err := s.activeTable(ctx, tx)
		if err != nil {
			return err
		}
		// A draft's age is judged by the database's clock, which dated it
		// (created_at): a console whose clock runs behind would submit an
		// expired draft, one ahead refuse a fresh one
		// (TestRevClock18SlowConsoleSubmitsAnExpiredDraft). The request is
		// dated as its approvals are, by this console's clock but never
		// after the database's: dated in the future by a console whose
		// clock runs ahead, every approval would be ignored as given
		// before it until the clocks met
		// (TestRevReplay18FastConsoleSubmitIgnoresEveryApproval).
		now, err := dbNow(ctx, tx)
		if err != nil {
			return err
		}
		stamp := earlier(s.cfg.Now(), now)
		judged := make([][]itemFact, len(reqs))
		for i := range reqs {
			req := &reqs[i]
			if req.Status != StatusDraft {
				return quarantine.Errorf(quarantine.ECONFLICT, "this selection was already submitted")
			}
			if v := replaypolicy.JudgeDraftAge(req.CreatedAt, now, s.cfg.DraftTTL); v.Outcome != replaypolicy.Go {
				return quarantine.Errorf(quarantine.ECONFLICT, "%s", v.Reason)
			}
			if judged[i], err = s.requestFacts(ctx, tx, *req); err != nil {
				return err
			}
		}
		// The address it submits under is one the requester is known by
		// from now on (Request.KnownAs), recorded before the audit chain.
		if err := seen(ctx, tx, actor); err != nil {
			return err
		}
		for i := range reqs {
			reqs[i] = reqs[i].SeenBy([]quarantine.Actor{actor})
		}
		if changed, err = s.leaveOutChanged(ctx, tx, reqs, judged, table, actor, meta); err != nil || changed != nil {
			return err // commit what changed; the submit itself is refused below
		}
		// The requests' own rows first, then every dead letter's status and
		// the counters in one statement, then the audit chain: the order
		// Close takes them in (a status moved after an audit append would
		// wait for counter rows while holding the chain's lock).
		refused := &RefusedError{Reasons: map[int64]string{}}
		steps := make([]submitStep, 0, len(reqs))
		for i := range reqs {
			req := &reqs[i]
			req.Reason, req.Rate, req.TypedConfirmation = in.Reason, in.Rates[req.ID], strings.TrimSpace(in.Confirmations[req.ID])
			if s.needsNote(judged[i]) {
				req.ReconciliationNote = in.ReconciliationNote
			}
			req.SubmittedAt = &stamp
			d, voided, err := s.submitOne(ctx, tx, req, table, items(judged[i]), actor)
			if err != nil {
				return err
			}
			if voided {
				// Voided, it was never submitted (submitRequest alone dates
				// that), and stays its requester's alone (Request.HiddenFrom).
				req.SubmittedAt = nil
				steps = append(steps, submitStep{req: req, d: d, voided: true})
				continue
			}
			if v := replaypolicy.SubmitVerdict(d, req.TypedConfirmation); v.Outcome != replaypolicy.Go {
				refused.Reasons[req.ID] = v.Reason
				continue
			}
			if err := s.request(ctx, tx, req, d, len(judged[i]), now); err != nil {
				return err
			}
			steps = append(steps, submitStep{req: req, d: d, live: len(judged[i])})
		}
		if len(refused.Reasons) > 0 {
			return refused
		}
		if err := requestDeadLetters(ctx, tx, steps); err != nil {
			return err
		}
		for _, st := range steps {
			if err := s.audited(ctx, tx, st, actor, meta, now); err != nil {
				return err
			}
		}
		out = reqs
		return nil
	})
	if denied != nil {
		err = s.auditDeniedObject(ctx, actor, meta, "replay.submit", "replay_batch", batch, err, denied...)
	}
	if err == nil && changed != nil {
		err = changed
	}
	if err != nil {
		return nil, fmt.Errorf("submit replay: %w", err)
	}
	return out, nil
}

// lockDeadLetters locks the dead letters of the live items of reqs, by key
// (lockBatchDeadLetters).
func lockDeadLetters(ctx context.Context, tx pgx.Tx, reqs []Request) error {
	ids := make([]int64, len(reqs))
	for i, r := range reqs {
		ids[i] = r.ID
	}
	if _, err := tx.Exec(ctx, lockBatchDeadLetters, ids); err != nil {
		return fmt.Errorf("lock the dead letters of the batch: %w", err)
	}
	return nil
}

// needsNote reports whether an item of fs has an error class that needs a
// reconciliation note (only such requests keep one).
func (s *Service) needsNote(fs []itemFact) bool {
	table := s.cfg.Policy()
	for _, f := range fs {
		if table != nil && table.ErrorRule(f.item.ErrorClass).ReconciliationNote {
			return true
		}
	}
	return false
}

// leaveOutChanged judges every live item of the batch's requests as it
// stands (AtRequest) and leaves out, with why, each one the rules no
// longer let go; the requests' counts and intents follow, and it is
// audited. It returns a RefusedError naming what changed, or nil when
// nothing did.
func (s *Service) leaveOutChanged(ctx context.Context, tx pgx.Tx, reqs []Request, judged [][]itemFact, table *replaypolicy.Table,
	actor quarantine.Actor, meta quarantine.RequestMeta) (*RefusedError, error) {
	refused := &RefusedError{Reasons: map[int64]string{}}
	emptied := map[int64]HeldElsewhere{} // the requests nothing is left of, by id
	for i := range reqs {
		req := &reqs[i]
		var left []int64
		var first string
		var holder int64 // the one open request holding every item left out (-1: not one)
		allHeld := true  // every item left out is held by another open request
		for _, f := range judged[i] {
			v := replaypolicy.JudgeItem(table, f.item, replaypolicy.AtRequest)
			if v.Outcome == replaypolicy.Go {
				continue
			}
			if _, err := tx.Exec(ctx, leaveOut, req.ID, f.deadLetterID, v.Reason, verdictName(v.Outcome), v.Check); err != nil {
				return nil, err
			}
			if first == "" {
				first = fmt.Sprintf("dead letter %d: %s", f.deadLetterID, v.Reason)
			}
			allHeld = allHeld && f.item.HeldBy != 0 && f.item.HeldBy != req.ID
			switch {
			case f.item.HeldBy == 0 || (holder != 0 && holder != f.item.HeldBy):
				holder = -1
			case holder == 0:
				holder = f.item.HeldBy
			}
			left = append(left, f.deadLetterID)
		}
		if len(left) == 0 {
			continue
		}
		live, err := liveItems(ctx, tx, req.ID)
		if err != nil {
			return nil, err
		}
		if len(live) == 0 && allHeld {
			// Nothing left, and nothing the requester could undo brings it
			// back: other requests hold it all.
			emptied[req.ID] = HeldElsewhere{By: max(holder, 0)}
		}
		hash := req.intent(live)
		if _, err := tx.Exec(ctx, setCounts, req.ID, len(live), len(left), hash); err != nil {
			return nil, err
		}
		e := requestEvent(actor, meta, "replay.draft.changed", req)
		e.Reason = first
		e.Before = map[string]any{"items": req.ItemCount, "intent": req.IntentHex()}
		e.After = map[string]any{"items": len(live), "left_out": left, "intent": fmt.Sprintf("%x", hash)}
		if _, err := audit.Append(ctx, tx, e); err != nil {
			return nil, err
		}
		refused.Reasons[req.ID] = fmt.Sprintf("%d of its items changed since the selection was made and are now left out (%s); "+
			"review what is left and submit again", len(left), first)
	}
	if len(refused.Reasons) == 0 {
		return nil, nil
	}
	if len(emptied) == len(reqs) {
		// Nothing of the batch is left, all of it in other open requests:
		// a submit again could only void it, so it is voided now, each draft saying why (another tab's
		// submit of the same selection took it, most often).
		if err := s.voidEmptied(ctx, tx, reqs, emptied, actor, meta); err != nil {
			return nil, err
		}
		refused.Voided = emptied
		for id, h := range emptied {
			refused.Reasons[id] = emptiedReason(h)
		}
	}
	return refused, nil
}

// voidEmptied voids the drafts of reqs nothing is left of (emptied, by
// id: the request that holds what they had, whose requester it reads into
// Yours), each audited.
func (s *Service) voidEmptied(ctx context.Context, tx pgx.Tx, reqs []Request, emptied map[int64]HeldElsewhere, actor quarantine.Actor,
	meta quarantine.RequestMeta) error {
	for i := range reqs {
		req := &reqs[i]
		h := emptied[req.ID]
		if h.By != 0 {
			var by quarantine.Actor
			if err := tx.QueryRow(ctx, selectRequester, h.By).Scan(&by.Issuer, &by.Subject); err != nil {
				return fmt.Errorf("read the requester of request %d: %w", h.By, err)
			}
			h.Yours = by.SameIdentity(actor)
			emptied[req.ID] = h
		}
		if err := s.setStatus(ctx, tx, req, StatusVoid, emptiedReason(h), actor, meta, "replay.void", nil); err != nil {
			return err
		}
	}
	return nil
}

// selectRequester is who requested request $1.
const selectRequester = `SELECT requester_issuer, requester_subject FROM replay_requests WHERE id = $1`

// emptiedReason is why a draft nothing is left of was voided (h: the
// request that holds what it had).
func emptiedReason(h HeldElsewhere) string {
	switch {
	case h.Yours:
		return fmt.Sprintf("Nothing was requested: you already requested this in replay request %d", h.By)
	case h.By != 0:
		return fmt.Sprintf("Nothing was requested: replay request %d already holds every dead letter of it", h.By)
	}
	return "Nothing was requested: other open replay requests hold every dead letter of it; each item's row says which"
}

// submitOne applies the rules to one request of a batch being submitted:
// its items (every one), then the request's terms, which fix its rate and
// so its intent hash, then what it needs. A request the rules find nothing
// to replay in is to be voided (voided true; Decision.Reason says why).
func (s *Service) submitOne(ctx context.Context, tx pgx.Tx, req *Request, table *replaypolicy.Table, items []replaypolicy.Item,
	actor quarantine.Actor) (d replaypolicy.Decision, voided bool, err error) {
	verdicts := make([]replaypolicy.Verdict, len(items))
	for i, it := range items {
		verdicts[i] = replaypolicy.JudgeItem(table, it, replaypolicy.AtRequest)
	}
	terms, v := replaypolicy.JudgeRequest(table, verdicts, policyRequest(*req, nil))
	switch v.Outcome {
	case replaypolicy.Go:
	case replaypolicy.Done:
		return v.Decision(table), true, nil // voided when the batch is audited (audited)
	default:
		return v.Decision(table), false, nil
	}
	live, err := liveItems(ctx, tx, req.ID)
	if err != nil {
		return replaypolicy.Decision{}, false, err
	}
	req.Rate, req.Classes = terms.Rate, terms.Union
	req.IntentHash = req.intent(live)
	return replaypolicy.Require(terms, actor, policyRequest(*req, nil), s.cfg.Now()), false, nil
}

// request moves a submitted draft of live items to pending_approval: its
// items hold their dead letters (a conflict names the request that holds
// one). Its dead letters become replay_requested with the batch's
// (requestDeadLetters), and it is audited last (audited). A draft made
// more than DraftTTL before now (the database's clock) is not submitted.
func (s *Service) request(ctx context.Context, tx pgx.Tx, req *Request, d replaypolicy.Decision, live int, now time.Time) error {
	var expired any // no expiry: NULL
	if s.cfg.DraftTTL > 0 {
		expired = now.Add(-s.cfg.DraftTTL)
	}
	// The version it returns is the one an approver reads it at: the
	// request Submit returns is approved at it (ApproveInput.Version).
	err := tx.QueryRow(ctx, submitRequest, req.ID, req.Reason, req.Rate, req.TypedConfirmation, req.IntentHash, *req.SubmittedAt, d.Reason, expired,
		req.ReconciliationNote, d.ApprovalsNeeded, req.Classes).Scan(&req.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return quarantine.Errorf(quarantine.ECONFLICT, "this selection was already submitted, or it expired")
	}
	if err != nil {
		return err
	}
	if err := s.hold(ctx, tx, req.ID, live); err != nil {
		return err
	}
	req.Status, req.ApprovalsNeeded = StatusPendingApproval, d.ApprovalsNeeded
	return nil
}

// submitStep is what Submit does to one request of a batch once every
// request was judged: void it, or audit it as requested (and approve it
// when it is ready); live counts its live items.
type submitStep struct {
	req    *Request
	d      replaypolicy.Decision
	voided bool
	live   int
}

// requestDeadLetters makes the dead letters of the requested steps'
// live items replay_requested, in one statement: every one, or it is a
// conflict.
func requestDeadLetters(ctx context.Context, tx pgx.Tx, steps []submitStep) error {
	var ids []int64
	live := 0
	for _, st := range steps {
		if !st.voided {
			ids, live = append(ids, st.req.ID), live+st.live
		}
	}
	if len(ids) == 0 {
		return nil
	}
	tag, err := tx.Exec(ctx, requestItemsOf, ids)
	if err != nil {
		return err
	}
	if n := int(tag.RowsAffected()); n != live {
		return quarantine.Errorf(quarantine.ECONFLICT, "%d of the %d dead letters of requests %v changed since they were judged; review the selection again",
			live-n, live, ids)
	}
	return nil
}

// audited writes what Submit did to one request of the batch to the audit
// chain, after every other write of the batch's rows: void, or requested
// with one row per item and approved at once when it is ready.
func (s *Service) audited(ctx context.Context, tx pgx.Tx, st submitStep, actor quarantine.Actor, meta quarantine.RequestMeta, now time.Time) error {
	req := st.req
	if st.voided {
		if err := s.setStatus(ctx, tx, req, StatusVoid, st.d.Reason, actor, meta, "replay.void", nil); err != nil {
			return err
		}
		return auditLeftOut(ctx, tx, req.ID, requestEvent(actor, meta, "replay.void", req))
	}
	e := requestEvent(actor, meta, "replay.request", req)
	e.Reason = req.Reason
	// With the tenant, everything the intent hash covers of the request
	// itself; its items' rows hold the rest (itemAfter).
	e.After = map[string]any{"class": req.Class, "items": req.ItemCount, "intent": req.IntentHex(), "rate": req.Rate, "needs": st.d.Requirement.String(),
		"policy_version": req.PolicyVersion, "reconciliation_note": req.ReconciliationNote}
	if err := auditItems(ctx, tx, req.ID, e, "replay.item.requested", nil); err != nil {
		return err
	}
	if err := auditLeftOut(ctx, tx, req.ID, e); err != nil {
		return err
	}
	if st.d.Ready {
		// Nobody approved it: the policy asks for no approval. The row
		// stays the requester's act (they submitted it) and says so.
		why := fmt.Sprintf("no approval needed: class %s asks for none (policy version %s)", req.Class, req.PolicyVersion)
		return s.approve(ctx, tx, req, actor, meta, now, why)
	}
	return nil
}

// The items a request leaves out (skipped at the draft, or since), with why.
const selectLeftOutItems = `SELECT ` + itemColumns + ` FROM replay_items i WHERE i.request_id = $1 AND i.skip_reason <> '' ORDER BY i.position`

// auditLeftOut appends, after the request's row e, one row per item the
// request leaves out, so that the log explains every item the request's
// page lists: "replay.item.skipped" for one already replayed (outcome ok:
// nothing was refused, there is nothing left to do), "replay.item.blocked"
// for one the rules refuse (outcome denied: the policy refused it, which
// is what denied means, so the Outcome filter finds every refusal of an
// item), as the worker names the same outcomes of a job, with the rule's
// reason. (A worker's blocked job is an error: there it also stands for a
// target that cannot take the message, or headers it cannot read.)
func auditLeftOut(ctx context.Context, tx pgx.Tx, requestID int64, e audit.Event) error {
	rows, err := tx.Query(ctx, selectLeftOutItems, requestID)
	if err != nil {
		return fmt.Errorf("read the items request %d leaves out: %w", requestID, err)
	}
	items, err := pgx.CollectRows(rows, scanItem)
	if err != nil {
		return fmt.Errorf("read the items request %d leaves out: %w", requestID, err)
	}
	if len(items) == 0 {
		return nil
	}
	events := make([]audit.Event, len(items))
	for i, it := range items {
		action, outcome := audit.ReplayItemPrefix+string(JobBlocked), audit.OutcomeDenied
		if it.Verdict == VerdictDone {
			action, outcome = audit.ReplayItemPrefix+string(JobSkipped), audit.OutcomeOK
		}
		events[i] = itemEvent(e, action, it, map[string]any{"request": requestID, "subject": it.Subject, "verdict": it.Verdict, "check": it.Check})
		events[i].Reason, events[i].Outcome = it.SkipReason, outcome
	}
	_, err = audit.AppendBatch(ctx, tx, events)
	return err
}

// A request waiting for approval takes the approvals the rules now ask of
// it (an edit may raise them); an approved one keeps what it was approved
// with.
const setApprovalsNeeded = `UPDATE replay_requests SET approvals_needed = $2 WHERE id = $1 AND status = 'pending_approval'`

// setApprovalsNeeded stores what the rules ask of request id as it stands
// (after an edit), unless they refuse it: then the approve button says why.
func (s *Service) setApprovalsNeeded(ctx context.Context, tx pgx.Tx, id int64, actor quarantine.Actor) error {
	req, err := getRequest(ctx, tx, id, false)
	if err != nil {
		return err
	}
	d, err := s.decide(ctx, tx, req, actor)
	if err != nil || d.Requirement == replaypolicy.Refused {
		return err
	}
	_, err = tx.Exec(ctx, setApprovalsNeeded, id, d.ApprovalsNeeded)
	return err
}

// hold makes request id's live items hold their dead letters. The unique
// index refuses a dead letter another open request holds: the savepoint
// keeps the transaction usable to name that request in the conflict.
func (s *Service) hold(ctx context.Context, tx pgx.Tx, id int64, live int) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	tag, err := sp.Exec(ctx, holdItems, id)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		if rerr := sp.Rollback(ctx); rerr != nil {
			return rerr
		}
		var other, deadLetter int64
		var status, tenant string
		if err := tx.QueryRow(ctx, selectHolder, id).Scan(&other, &deadLetter, &status, &tenant); err != nil {
			return fmt.Errorf("name the request holding a dead letter of request %d: %w", id, err)
		}
		return quarantine.Errorf(quarantine.ECONFLICT, "dead letter %d is already held by replay request %d, and a dead letter is in one request at a time; %s",
			deadLetter, other, replaypolicy.HeldFreedBy(other, status, tenant))
	}
	if err != nil {
		return err
	}
	if int(tag.RowsAffected()) != live {
		return quarantine.Errorf(quarantine.ECONFLICT, "request %d changed while it was submitted; review it again", id)
	}
	return sp.Commit(ctx)
}

// approve moves a request to approved and writes its jobs (the outbox) in
// the caller's transaction: one per item that holds its dead letter, every
// live item, or it is a conflict.
// The audit row says why in reason: the approvals that completed it, or
// that the policy needs none (actor is then the requester who submitted).
func (s *Service) approve(ctx context.Context, tx pgx.Tx, req *Request, actor quarantine.Actor, meta quarantine.RequestMeta, now time.Time,
	reason string) error {
	err := tx.QueryRow(ctx, approveRequest, req.ID, now).Scan(&req.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return quarantine.Errorf(quarantine.ECONFLICT, "request %d is no longer waiting for approval", req.ID)
	}
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, insertJobs, req.ID, now, req.Rate)
	if err != nil {
		return err
	}
	if int(tag.RowsAffected()) != req.ItemCount {
		return quarantine.Errorf(quarantine.ECONFLICT, "only %d of the %d items of request %d still hold their dead letters; it cannot be approved",
			tag.RowsAffected(), req.ItemCount, req.ID)
	}
	before := req.Status
	req.Status = StatusApproved
	e := requestEvent(actor, meta, "replay.approved", req)
	e.Reason = reason
	e.Before = map[string]any{"status": before}
	e.After = map[string]any{"status": StatusApproved, "intent": req.IntentHex(), "jobs": req.ItemCount}
	return auditItems(ctx, tx, req.ID, e, "", nil)
}
