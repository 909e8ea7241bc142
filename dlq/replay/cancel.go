package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

const (
	// The jobs of a request that may still publish, locked, with what
	// JudgeUnsent judges of them: whether a publish of them may have landed
	// (first_attempt_at: set before every publish, cleared when an answer
	// said it did not land) and whether a worker holds them under a live
	// lease.
	selectHaltable = `SELECT id, dead_letter_id, dead_lettered_at, state, first_attempt_at IS NOT NULL, state = 'claimed' AND lease_until >= now()
        FROM replay_jobs WHERE request_id = $1 AND state IN ('pending', 'claimed', 'deferred', 'unknown') -- replayed ones stay replayed
        ORDER BY id FOR UPDATE`
	// What becomes of each, as judged; a job that moved since it was read
	// (none can: it is locked) is not touched.
	haltJobs = `UPDATE replay_jobs j SET state = u.state, result = u.result, updated_at = now(), lease_owner = '', lease_until = NULL
        FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS u(id, prev, state, result)
        WHERE j.id = u.id AND j.state = u.prev -- only as it was judged
        RETURNING j.id`
	// A closed request lets go of its dead letters, but those of jobs a
	// worker holds (released when it records them) and those a person must
	// settle (released when they do).
	releaseItems = `UPDATE replay_items i SET held = false WHERE i.request_id = $1 AND i.held
        AND NOT EXISTS (SELECT 1 FROM replay_jobs j WHERE j.request_id = $1 AND j.dead_letter_id = i.dead_letter_id
                        AND j.state IN ('claimed', 'needs_reconciliation'))`
	// A person who rejects or cancels a request is named on it (the sweeper
	// and the workers end requests as nobody).
	setRequestStatus = `UPDATE replay_requests SET status = $2, status_reason = $3, version = version + 1,
        finished_at = CASE WHEN $2 IN ('done', 'rejected', 'cancelled', 'void') THEN now() ELSE finished_at END,
        closed_by_issuer = CASE WHEN $2 IN ('rejected', 'cancelled') THEN $4 ELSE closed_by_issuer END,
        closed_by_subject = CASE WHEN $2 IN ('rejected', 'cancelled') THEN $5 ELSE closed_by_subject END,
        closed_by_email = CASE WHEN $2 IN ('rejected', 'cancelled') THEN $6 ELSE closed_by_email END,
        closed_by_email_verified = CASE WHEN $2 IN ('rejected', 'cancelled') THEN $7 ELSE closed_by_email_verified END
        WHERE id = $1`
	// Only a live item is edited; the hash it had and the one taken at
	// ingest are read in the same statement (the subquery sees the row as
	// it was).
	editPayload = `UPDATE replay_items i SET payload = $3, payload_sha256 = $4, edit_reason = $5, edited_at = $6
        FROM dead_letters d
        WHERE i.request_id = $1 AND i.dead_letter_id = $2
          AND d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
          AND (i.skip_reason = '' -- a live item; or, in a draft, one only an edit lets go
               OR ($7 AND i.verdict_check = 'error-class-fix'))
        RETURNING (SELECT payload_sha256 FROM replay_items WHERE request_id = $1 AND dead_letter_id = $2), d.payload_sha256, i.msg_id,
            i.skip_reason <> ''`
	// Approvals of the old intent no longer count.
	deleteApprovals = `DELETE FROM replay_approvals WHERE request_id = $1`
	setIntent       = `UPDATE replay_requests SET payload_edited = true, intent_hash = $2, version = version + 1
        WHERE id = $1 AND status IN ('draft', 'pending_approval')` // never the intent of an approved request
	// Drafts and requests waiting for approval: the ones a new policy can void.
	selectUnapproved = `SELECT ` + requestColumns + ` FROM replay_requests WHERE status IN ('draft', 'pending_approval') ORDER BY id FOR UPDATE`
	// Drafts older than their time to live, a batch at a time; one a submit
	// holds is left to it.
	selectExpiredDrafts = `SELECT ` + requestColumns + ` FROM replay_requests WHERE status = 'draft' AND created_at <= $1
        ORDER BY created_at LIMIT 1000 FOR UPDATE SKIP LOCKED`
)

// What a closed request did not publish goes back to quarantine (the
// counters follow: dlq.StatusMove); a job a worker holds is left to it, and
// so is one a person must settle.
var requeueItems = dlq.StatusMove(`
    SELECT d.id, d.dead_lettered_at, d.status
    FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
    WHERE i.request_id = $1 AND i.held -- only what this request holds
      AND d.status = 'replay_requested'
      AND NOT EXISTS (SELECT 1 FROM replay_jobs j WHERE j.request_id = $1 AND j.dead_letter_id = d.id
                      AND j.state IN ('claimed', 'needs_reconciliation'))
    ORDER BY d.id, d.dead_lettered_at -- by key, as Close and Submit take them
    FOR UPDATE OF d`, `'quarantined'`, "id")

// Cancel stops the requester's own request: nothing not yet published will
// be. Workers check the request before every publish. Anyone else is
// refused (forbidden, audited as denied).
func (s *Service) Cancel(ctx context.Context, id int64, actor quarantine.Actor, reason string, meta quarantine.RequestMeta) error {
	var denied string // the tenant of a request the actor may not cancel
	err := dlq.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		denied = "" // a run again starts afresh
		req, err := getRequest(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if v := replaypolicy.MayCancel(req.Requester, actor); v.Outcome != replaypolicy.Go {
			denied = req.Tenant
			return quarantine.Errorf(quarantine.EFORBIDDEN, "%s", v.Reason)
		}
		if !req.Status.Open() {
			return quarantine.Errorf(quarantine.ECONFLICT, "the request is already %s", req.Status)
		}
		return s.halt(ctx, tx, &req, "cancelled by the requester", strings.TrimSpace(reason), actor, meta, "replay.cancel")
	})
	if denied != "" {
		err = s.auditDenied(ctx, actor, meta, "replay.cancel", denied, id, err)
	}
	if err != nil {
		return fmt.Errorf("cancel replay %d: %w", id, err)
	}
	return nil
}

// halt ends an open request that may have jobs: each job not yet
// published is cancelled (why: result), and each whose publish may have
// landed needs a person and keeps its dead letter (JudgeUnsent); a job a
// worker holds is left to it (it checks the request before it publishes).
// Each job's end is audited, and the request is cancelled with reason,
// audited as action. It takes the jobs, then the dead letters and the
// counters, and appends to the audit chain last: a worker recording takes
// them in that order too.
func (s *Service) halt(ctx context.Context, tx pgx.Tx, req *Request, result, reason string, actor quarantine.Actor, meta quarantine.RequestMeta, action string) error {
	rows, err := tx.Query(ctx, selectHaltable, req.ID)
	if err != nil {
		return err
	}
	type haltable struct {
		id         int64
		deadLetter dlq.Key
		u          replaypolicy.Unsent
	}
	hs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (haltable, error) {
		var h haltable
		return h, r.Scan(&h.id, &h.deadLetter.ID, &h.deadLetter.At, &h.u.State, &h.u.Attempted, &h.u.LeaseLive)
	})
	if err != nil {
		return err
	}
	cancel := replaypolicy.Verdict{Outcome: replaypolicy.Cancel, Check: replaypolicy.CheckCancelled, Reason: result}
	var ids []int64
	var prevs, states, results []string
	var unsettled []dlq.Key
	byID := map[int64]haltable{}
	for _, h := range hs {
		v := replaypolicy.JudgeUnsent(cancel, h.u)
		state := jobStateFor(v.Outcome)
		if state == JobPending {
			continue // a worker holds it
		}
		ids, prevs, states, results = append(ids, h.id), append(prevs, h.u.State), append(states, string(state)), append(results, v.Reason)
		if state == JobNeedsReconciliation {
			unsettled = append(unsettled, h.deadLetter)
		}
		byID[h.id] = h
	}
	var events []audit.Event
	if len(ids) > 0 {
		rows, err := tx.Query(ctx, haltJobs, ids, prevs, states, results)
		if err != nil {
			return err
		}
		done, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(done) != len(ids) {
			return quarantine.Errorf(quarantine.ECONFLICT, "%d jobs of request %d changed while it was halted; try again", len(ids)-len(done), req.ID)
		}
		if err := markHeld(ctx, tx, markNeedsReconciliation, req.ID, unsettled); err != nil {
			return err
		}
		events = make([]audit.Event, 0, len(ids))
		for i, id := range ids {
			e := requestEvent(actor, meta, audit.ReplayItemPrefix+states[i], req)
			e.ObjectType, e.ObjectID, e.Reason = "dead_letter", fmt.Sprint(byID[id].deadLetter.ID), results[i]
			e.After = map[string]any{"request": req.ID, "job": id, "was": prevs[i]}
			if states[i] != string(JobCancelled) {
				e.Outcome = audit.OutcomeError
			}
			events = append(events, e)
		}
	}
	if err := release(ctx, tx, req.ID); err != nil {
		return err
	}
	if _, err := audit.AppendBatch(ctx, tx, events); err != nil {
		return err
	}
	return s.setStatus(ctx, tx, req, StatusCancelled, reason, actor, meta, action)
}

// close ends a request and returns its unpublished dead letters to
// quarantined.
func (s *Service) close(ctx context.Context, tx pgx.Tx, req *Request, to Status, reason string, actor quarantine.Actor, meta quarantine.RequestMeta, action string) error {
	if err := release(ctx, tx, req.ID); err != nil {
		return err
	}
	return s.setStatus(ctx, tx, req, to, reason, actor, meta, action)
}

// release returns the unpublished dead letters of request id, which is
// ending, to quarantined and lets go of them (requeueItems, releaseItems).
func release(ctx context.Context, tx pgx.Tx, id int64) error {
	if _, err := tx.Exec(ctx, requeueItems, id); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, releaseItems, id)
	return err
}

func (s *Service) setStatus(ctx context.Context, tx pgx.Tx, req *Request, to Status, reason string, actor quarantine.Actor, meta quarantine.RequestMeta, action string) error {
	if _, err := tx.Exec(ctx, setRequestStatus, req.ID, to, reason, actor.Issuer, actor.Subject, actor.Email, actor.EmailVerified); err != nil {
		return err
	}
	e := requestEvent(actor, meta, action, req)
	e.Reason = reason
	e.Before, e.After = map[string]any{"status": req.Status}, map[string]any{"status": to}
	req.Status, req.StatusReason = to, reason
	if to == StatusRejected || to == StatusCancelled {
		req.ClosedBy = actor
	}
	return auditItems(ctx, tx, req.ID, e, "")
}

// PayloadEdit is a new payload for one item, and why.
type PayloadEdit struct {
	Payload []byte
	Reason  string
}

// EditPayload replaces the payload of one item of the requester's draft or
// request waiting for approval, where the rules allow it (JudgeEdit: never
// same_operation, only the requester, forbidden and audited as denied; a
// reason is required, invalid without; bytes equal to the ones received or
// to the ones the item holds are no edit, invalid: JudgePayloadChange). In
// a draft it may also edit an
// item left out because its error class replays only edited or after a
// fix: judged again with the edit, it goes if the rules now let it
// (revive). The original message id is kept;
// the intent changes, so earlier approvals no longer count, and an edited
// request needs one approver whatever its class. The audit row holds the
// hash taken at ingest, the hash before and the hash after.
func (s *Service) EditPayload(ctx context.Context, id, deadLetterID int64, actor quarantine.Actor, edit PayloadEdit, meta quarantine.RequestMeta) error {
	var denied string // the tenant of a request the actor may not edit
	edit.Reason = strings.TrimSpace(edit.Reason)
	// The request first, then only its own items and approvals, and the
	// audit chain: no lock race to lose (pgx.BeginFunc, not dlq.InTx).
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		req, err := getRequest(ctx, tx, id, true)
		if err != nil {
			return err
		}
		switch v := replaypolicy.JudgeEdit(req.Class, req.Requester, actor, edit.Reason); {
		case v.Check == replaypolicy.CheckEditReason:
			return refuse(v, quarantine.EINVALID)
		case v.Outcome != replaypolicy.Go:
			denied = req.Tenant
			return refuse(v, quarantine.EFORBIDDEN)
		}
		if !req.Status.Editable() {
			return quarantine.Errorf(quarantine.ECONFLICT, "the request is %s; only a request not yet approved can be edited", req.Status)
		}
		if err := s.judgeEditSize(ctx, tx, id, deadLetterID, len(edit.Payload)); err != nil {
			return err
		}
		sum := sha256.Sum256(edit.Payload)
		var old, original []byte
		var msgID string
		var leftOut bool
		err = tx.QueryRow(ctx, editPayload, id, deadLetterID, edit.Payload, sum[:], edit.Reason, s.cfg.Now(), req.Status == StatusDraft).
			Scan(&old, &original, &msgID, &leftOut)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("item %d of request %d: %w", deadLetterID, id, errNoItem)
		}
		if err != nil {
			return err
		}
		if v := replaypolicy.JudgePayloadChange(hex.EncodeToString(original), hex.EncodeToString(old), hex.EncodeToString(sum[:])); v.Outcome != replaypolicy.Go {
			return refuse(v, quarantine.EINVALID) // rolls the edit back
		}
		if leftOut {
			if err := s.revive(ctx, tx, req, deadLetterID); err != nil {
				return err
			}
		}
		items, err := liveItems(ctx, tx, id)
		if err != nil {
			return err
		}
		hash := req.intent(items)
		if _, err := tx.Exec(ctx, deleteApprovals, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, setIntent, id, hash); err != nil {
			return err
		}
		if err := s.setApprovalsNeeded(ctx, tx, id, actor); err != nil {
			return err
		}
		e := audit.NewEvent(actor, meta, "replay.edit_payload")
		e.Tenant, e.ObjectType, e.ObjectID, e.MessageID, e.Reason = req.Tenant, "dead_letter", fmt.Sprint(deadLetterID), msgID, edit.Reason
		e.Before = map[string]any{"payload_sha256": hex.EncodeToString(old), "original_sha256": hex.EncodeToString(original), "intent": req.IntentHex()}
		e.After = map[string]any{"payload_sha256": hex.EncodeToString(sum[:]), "intent": hex.EncodeToString(hash), "request": id}
		_, err = audit.Append(ctx, tx, e)
		return err
	})
	if denied != "" {
		err = s.auditDenied(ctx, actor, meta, "replay.edit_payload", denied, id, err)
	}
	if err != nil {
		return fmt.Errorf("edit payload of replay %d: %w", id, err)
	}
	return nil
}

// The headers and ids an item of a request is published with.
const selectItemSend = `SELECT headers, msg_id, operation_id, correlation_id FROM replay_items WHERE request_id = $1 AND dead_letter_id = $2`

// judgeEditSize refuses (invalid, with the rule's sentence) an edit that
// makes item deadLetterID of request id a message NATS cannot publish
// (JudgeSend: bigger than the server's max_payload).
func (s *Service) judgeEditSize(ctx context.Context, tx pgx.Tx, id, deadLetterID int64, size int) error {
	var raw []byte
	var msgID, opID, corrID string
	err := tx.QueryRow(ctx, selectItemSend, id, deadLetterID).Scan(&raw, &msgID, &opID, &corrID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("item %d of request %d: %w", deadLetterID, id, errNoItem)
	}
	if err != nil {
		return err
	}
	var hs []dlq.HeaderValue
	if err := json.Unmarshal(raw, &hs); err != nil {
		return fmt.Errorf("headers of item %d of request %d: %w", deadLetterID, id, err)
	}
	send := sendFacts(hs, nil, "", int64(size), s.cfg.MaxPayload, msgID, opID, corrID)
	send.HasBadHeader, send.BadHeader, send.AlteredHeader = false, "", "" // judged with the item; the edit is about its size
	if v := replaypolicy.JudgeSend(replaypolicy.Verdict{Rule: -1}, send); v.Outcome != replaypolicy.Go {
		return refuse(v, quarantine.EINVALID)
	}
	return nil
}

// ExpireDrafts voids the drafts older than the draft time to live (none
// when it is 0), a thousand at a time, each audited; it returns how many.
// Drafts hold no dead letter, so nothing else changes.
func (s *Service) ExpireDrafts(ctx context.Context) (int, error) {
	if s.cfg.DraftTTL <= 0 {
		return 0, nil
	}
	now := s.cfg.Now()
	n, err := s.voidEach(ctx, "replay.draft_expired", nil, func(r Request) string {
		if v := replaypolicy.JudgeDraftAge(r.CreatedAt, now, s.cfg.DraftTTL); v.Outcome != replaypolicy.Go {
			return v.Reason
		}
		return ""
	}, selectExpiredDrafts, now.Add(-s.cfg.DraftTTL))
	if err != nil {
		return 0, fmt.Errorf("expire replay drafts: %w", err)
	}
	return n, nil
}

// VoidStale voids drafts and requests waiting for approval made under
// another version than the active one (PolicyStanding.Voids): their
// approvals no longer count. A process whose own table is not the active
// version voids nothing made under the active one. The active version is
// read in the transaction that voids, under the lock an activation takes
// (lockPolicyRead), so none commits in between and turns the requests it
// voids into ones made under the active version. It returns how many it
// voided.
func (s *Service) VoidStale(ctx context.Context) (int, error) {
	var st PolicyStanding
	n, err := s.voidEach(ctx, "replay.void", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockPolicyRead); err != nil {
			return err
		}
		active, err := activePolicy(ctx, tx)
		st = PolicyStanding{Table: s.cfg.Policy(), Active: active}
		if err == nil && s.afterStaleRead != nil {
			s.afterStaleRead()
		}
		return err
	}, func(r Request) string {
		if st.Voids(r.PolicyVersion) {
			return "the replay policy changed since this request was made; request again"
		}
		return ""
	}, selectUnapproved)
	if err != nil {
		return 0, fmt.Errorf("void stale replay requests: %w", err)
	}
	return n, nil
}

// voidEach voids, in one transaction and audited as action by the console
// itself, each request query (with args) selects and locks for which why
// gives a reason; it returns how many. first (nil: nothing) runs at the
// start of the transaction, before query, each time it runs.
func (s *Service) voidEach(ctx context.Context, action string, first func(pgx.Tx) error, why func(Request) string, query string, args ...any) (int, error) {
	n, _, err := s.eachLockedAfter(ctx, first, func(tx pgx.Tx, r *Request) (bool, error) {
		reason := why(*r)
		if reason == "" {
			return false, nil
		}
		return true, s.close(ctx, tx, r, StatusVoid, reason, sweeper(), quarantine.RequestMeta{}, action)
	}, query, args...)
	return n, err
}

// eachLocked runs act, in one transaction, on each request query (with
// args) selects and locks; it returns on how many act acted, and the
// requests it passed over (in query's order). act must touch nothing
// outside the database: the transaction runs again when it lost a lock
// race (dlq.InTx).
func (s *Service) eachLocked(ctx context.Context, act func(pgx.Tx, *Request) (bool, error), query string, args ...any) (int, []Request, error) {
	return s.eachLockedAfter(ctx, nil, act, query, args...)
}

// eachLockedAfter is eachLocked with first (nil: nothing) run at the
// start of the transaction, before query, each time it runs.
func (s *Service) eachLockedAfter(ctx context.Context, first func(pgx.Tx) error, act func(pgx.Tx, *Request) (bool, error), query string, args ...any) (int, []Request, error) {
	n := 0
	var passed []Request
	err := dlq.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		n, passed = 0, nil // a run again starts afresh
		if first != nil {
			if err := first(tx); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		reqs, err := pgx.CollectRows(rows, scanRequest)
		if err != nil {
			return err
		}
		for i := range reqs {
			acted, err := act(tx, &reqs[i])
			if err != nil {
				return err
			}
			if acted {
				n++
			} else {
				passed = append(passed, reqs[i])
			}
		}
		return nil
	})
	return n, passed, err
}

// sweeper is who the audit log names for what the console does by itself
// to replay requests.
func sweeper() quarantine.Actor { return quarantine.Actor{Subject: "replay-sweeper"} }
