package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

const (
	// The item an edit changes, locked, with the hash it holds and the one
	// taken at ingest.
	selectEditable = `SELECT i.payload_sha256, d.payload_sha256, i.msg_id, i.operation_id, i.skip_reason
        FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
        WHERE i.request_id = $1 AND i.dead_letter_id = $2
          AND (i.skip_reason = '' -- a live item; or, in a draft, one only an edit lets go
               OR ($3 AND i.verdict_check = 'error-class-fix')
               OR ($4 AND i.payload IS NOT NULL)) -- or, for its undo, any item holding an edit
        FOR UPDATE OF i`
	editPayload = `UPDATE replay_items SET payload = $3, payload_sha256 = $4, edit_reason = $5, edited_at = least($6::timestamptz, now())
        WHERE request_id = $1 AND dead_letter_id = $2
          AND EXISTS (SELECT 1 FROM replay_requests r WHERE r.id = $1 AND r.status IN ('draft', 'pending_approval'))` // never an approved request's payload
	// An edit undone: the item sends its dead letter's payload again, as
	// one never edited does, under the hash taken at ingest ($3).
	undoEdit = `UPDATE replay_items SET payload = NULL, payload_sha256 = $3, edit_reason = '', edited_at = NULL
        WHERE request_id = $1 AND dead_letter_id = $2 AND payload IS NOT NULL -- only an edit is undone
          AND EXISTS (SELECT 1 FROM replay_requests r WHERE r.id = $1 AND r.status IN ('draft', 'pending_approval'))` // never an approved request's
	// Approvals of the old intent no longer count: each is audited as
	// voided by the edit (dropApprovals).
	deleteApprovals = `DELETE FROM replay_approvals WHERE request_id = $1
        RETURNING approver_issuer, approver_subject, approver_email, approved_at, voided_at IS NULL`
	// The new intent; the request is edited while an item of it holds an
	// edit ($3: one was just made, nothing to count).
	setIntent = `UPDATE replay_requests r SET intent_hash = $2, version = version + 1,
        payload_edited = CASE WHEN $3 THEN true
                              ELSE EXISTS (SELECT 1 FROM replay_items i WHERE i.request_id = r.id AND i.payload IS NOT NULL
                                                                 AND i.skip_reason = '') END -- a left-out item sends nothing
        WHERE id = $1 AND status IN ('draft', 'pending_approval')` // never the intent of an approved request
)

// PayloadEdit is a new payload for one item, and why.
type PayloadEdit struct {
	Payload []byte
	Reason  string
	// Undo puts the payload received back in place of the item's edit
	// (Payload is not read): as Payload holding the bytes received.
	Undo bool
}

// PayloadChange is what ChangePayload did to an item.
type PayloadChange struct {
	// Undone: the payload received is back in place of an edit; the item
	// sends it as one never edited does.
	Undone bool
	// LeftOut says, for an edit undone in a draft, why the rules leave the
	// item out without it ("" when it goes); in a request waiting for
	// approval, why the item was left out, as it stays.
	LeftOut string
	// Approved: an edit undone left a request waiting for approval that
	// needs none (its class asks for none, and only the edit did): it is
	// approved, as its submit would have approved it, and its jobs are
	// written.
	Approved bool
}

// EditPayload is ChangePayload, for callers that need only its error.
func (s *Service) EditPayload(ctx context.Context, id, deadLetterID int64, actor quarantine.Actor, edit PayloadEdit, meta quarantine.RequestMeta) error {
	_, err := s.ChangePayload(ctx, id, deadLetterID, actor, edit, meta)
	return err
}

// ChangePayload replaces the payload of one item of the requester's draft
// or request waiting for approval, where the rules allow it (JudgeEdit:
// never same_operation, only the requester, forbidden and audited as
// denied; a reason is required, invalid without; the bytes the item holds
// already are no edit, invalid: JudgePayloadChange). In a draft it may
// also edit an item left out because its error class replays only edited
// or after a fix: judged again with the edit, it goes if the rules now let
// it (revive); an edit that leaves it out all the same (the draft's own
// rules refuse it then, as a second item of a class never replayed in
// bulk; the item's rules no edit satisfies are judged before its error
// class's, so such an item is never left out as one an edit lets go) is not kept:
// invalid, naming that rule, so that no edit of an item not sent makes
// the draft need an approver or shows a diff. The original message id is kept; the intent changes, so
// earlier approvals no longer count, and an edited request needs one
// approver whatever its class.
//
// The payload received, in place of an edit (or PayloadEdit.Undo), undoes
// it (replaypolicy.EditUndone): the item sends the dead letter's payload
// again, and is judged again as its draft judged it (JudgeUndo): in a
// draft, one the rules refuse without the edit is left out, saying why;
// in a request waiting for approval, such an item keeps its edit
// (invalid). Approvals no longer count, as after any edit, and the
// request needs what its items ask for without it: one waiting for
// approval that then needs none is approved, as its submit would have
// approved it (approveIfReady). The audit row holds
// the hash taken at ingest, the hash before and the hash after, and
// whether the edit was undone. An undo, like an edit, needs a reason
// (invalid without, in its own words).
func (s *Service) ChangePayload(ctx context.Context, id, deadLetterID int64, actor quarantine.Actor, edit PayloadEdit,
	meta quarantine.RequestMeta) (PayloadChange, error) {
	var out PayloadChange
	var denied string // the tenant of a request the actor may not edit
	edit.Reason = strings.TrimSpace(edit.Reason)
	// The request first, then only its own items and approvals, and the
	// audit chain: no lock race to lose (pgx.BeginFunc, not dlq.InTx).
	tctx, jctx, cancel := judging(ctx)
	defer cancel()
	err := pgx.BeginFunc(tctx, s.pool, func(tx pgx.Tx) error {
		out = PayloadChange{}
		req, err := getRequest(jctx, tx, id, true)
		if err != nil {
			return err
		}
		switch v := replaypolicy.JudgeEdit(req.Class, req.Requester, actor, edit.Reason); {
		case v.Check == replaypolicy.CheckEditReason && edit.Undo:
			// Nothing new is typed: what is missing is why the edit goes.
			return quarantine.Errorf(quarantine.EINVALID, "say why the edit is undone: the audit log keeps it with the change")
		case v.Check == replaypolicy.CheckEditReason:
			return refuse(v, quarantine.EINVALID)
		case v.Outcome != replaypolicy.Go:
			denied = req.Tenant
			return refuse(v, quarantine.EFORBIDDEN)
		}
		if err := ctx.Err(); err != nil {
			return err // judged, and not refused: a client that left changes nothing
		}
		if !req.Status.Editable() {
			return quarantine.Errorf(quarantine.ECONFLICT, "the request is %s; only a request not yet approved can be edited", req.Status)
		}
		if !edit.Undo {
			// An edit is judged (judgeEditItem, revive) and sets the
			// approvals the request needs, which the worker's run-time
			// check of its people reads: by the active rules only. (An
			// undo is refused where it would approve: approvedOnUndo.)
			if _, err := s.activeTable(tctx, tx); quarantine.ErrorCode(err) == quarantine.ECONFLICT {
				return quarantine.Errorf(quarantine.ECONFLICT, "the edit was not kept: %s", quarantine.ErrorMessage(err))
			} else if err != nil {
				return err
			}
		}
		if err := seen(ctx, tx, actor); err != nil { // before the audit chain, as every action takes them
			return err
		}
		draft := req.Status == StatusDraft
		var old, original []byte
		var msgID, opID, skipped string
		err = tx.QueryRow(ctx, selectEditable, id, deadLetterID, draft, edit.Undo).Scan(&old, &original, &msgID, &opID, &skipped)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("item %d of request %d: %w", deadLetterID, id, errNoItem)
		}
		if err != nil {
			return err
		}
		sum := sha256.Sum256(edit.Payload)
		after := sum[:]
		if edit.Undo {
			after = original
		}
		if v := replaypolicy.JudgePayloadChange(hex.EncodeToString(original), hex.EncodeToString(old), hex.EncodeToString(after)); v.Outcome != replaypolicy.Go {
			return refuse(v, quarantine.EINVALID)
		}
		out.Undone = replaypolicy.EditUndone(hex.EncodeToString(original), hex.EncodeToString(after))
		if out.Undone {
			if out.LeftOut, err = s.undoEdit(ctx, tx, req, deadLetterID, original, skipped); err != nil {
				return err
			}
		} else {
			if err := s.judgeEditItem(ctx, tx, id, deadLetterID); err != nil {
				return err
			}
			if err := s.judgeEditSize(ctx, tx, id, deadLetterID, len(edit.Payload)); err != nil {
				return err
			}
			if tag, err := tx.Exec(ctx, editPayload, id, deadLetterID, edit.Payload, after, edit.Reason, s.cfg.Now()); err != nil {
				return err
			} else if tag.RowsAffected() != 1 { // the status check above, kept by the statement too
				return quarantine.Errorf(quarantine.ECONFLICT, "the request is no longer editable; only a request not yet approved can be edited")
			}
			if skipped != "" {
				v, err := s.revive(ctx, tx, req, deadLetterID)
				if err != nil {
					return err
				}
				if v.Outcome != replaypolicy.Go {
					// The transaction rolls back: the item stays left out
					// as drafted, holding no edit.
					return quarantine.Errorf(quarantine.EINVALID,
						"the edit is not kept: with it the rules still leave this item out (%s)", v.Reason)
				}
			}
		}
		items, err := liveItems(ctx, tx, id)
		if err != nil {
			return err
		}
		hash := req.intent(items)
		if err := dropApprovals(ctx, tx, &req, actor, meta, deadLetterID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, setIntent, id, hash, !out.Undone); err != nil {
			return err
		}
		if err := s.setApprovalsNeeded(ctx, tx, id, actor); err != nil {
			return err
		}
		e := audit.NewEvent(actor, meta, audit.ActionReplayEditPayload)
		e.Tenant, e.ObjectType, e.ObjectID, e.MessageID, e.OperationID, e.Reason = req.Tenant, "dead_letter", fmt.Sprint(deadLetterID), msgID, opID, edit.Reason
		e.Before = map[string]any{"payload_sha256": hex.EncodeToString(old), "original_sha256": hex.EncodeToString(original), "intent": req.IntentHex()}
		afterEdit := map[string]any{"payload_sha256": hex.EncodeToString(after), "intent": hex.EncodeToString(hash), "request": id}
		if out.Undone {
			afterEdit["undone"] = true
			if out.LeftOut != "" {
				afterEdit["left_out"] = out.LeftOut
			}
		}
		e.After = afterEdit
		if _, err := audit.Append(ctx, tx, e); err != nil {
			return err
		}
		if out.Undone && req.Status == StatusPendingApproval {
			out.Approved, err = s.approveIfReady(ctx, tx, id, actor, meta)
			if quarantine.ErrorCode(err) == quarantine.ECONFLICT {
				return quarantine.Errorf(quarantine.ECONFLICT, "the edit was not undone: %s", quarantine.ErrorMessage(err))
			}
		}
		return err
	})
	if denied != "" {
		err = s.auditDenied(ctx, actor, meta, audit.ActionReplayEditPayload, denied, id, err)
	}
	if err != nil {
		return PayloadChange{}, fmt.Errorf("edit payload of replay %d: %w", id, err)
	}
	return out, nil
}

// undoEdit puts back the payload received (of hash original) in place of
// the edit of item deadLetterID of req and judges the item again as its
// draft did (JudgeUndo): in a draft, one the rules refuse without the edit
// is left out (judgeAgain; an item left out, skipped saying why, is put
// back first: reviveUndone), and why is returned; in a request waiting for
// approval, one the rules refuse (JudgeItem AtRequest) keeps its edit:
// invalid, the transaction rolls back, and one left out stays out, as
// skipped says, which is returned.
func (s *Service) undoEdit(ctx context.Context, tx pgx.Tx, req Request, deadLetterID int64, original []byte, skipped string) (string, error) {
	tag, err := tx.Exec(ctx, undoEdit, req.ID, deadLetterID, original)
	if err != nil {
		return "", err
	}
	if tag.RowsAffected() != 1 {
		// The status check before it, kept by the statement too.
		return "", quarantine.Errorf(quarantine.ECONFLICT, "item %d of request %d holds no edit to undo, or the request is no longer editable: reload the request", deadLetterID, req.ID)
	}
	if req.Status == StatusDraft {
		if skipped != "" {
			return s.reviveUndone(ctx, tx, req, deadLetterID)
		}
		v, err := s.judgeAgain(ctx, tx, req, deadLetterID)
		if err != nil || v.Outcome == replaypolicy.Go {
			return "", err
		}
		return v.Reason, nil
	}
	fs, err := s.itemFacts(ctx, tx, req, deadLetterID)
	if err != nil {
		return "", err
	}
	for _, f := range fs {
		v := replaypolicy.JudgeItem(s.cfg.Policy(), f.item, replaypolicy.AtRequest)
		if u := replaypolicy.JudgeUndo(false, v); u.Outcome != replaypolicy.Go {
			return "", refuse(u, quarantine.EINVALID)
		}
	}
	return skipped, nil
}

// approveIfReady approves request id, waiting for approval, when the
// rules need nothing more of it once an edit of it was undone
// (approvedOnUndo), as its submit approves such a request: an edit undone
// may leave one that waited only for the edit's approver. It returns
// whether it approved it; a process whose policy is not the active
// version approves nothing (approvedOnUndo's conflict).
func (s *Service) approveIfReady(ctx context.Context, tx pgx.Tx, id int64, actor quarantine.Actor, meta quarantine.RequestMeta) (bool, error) {
	req, err := getRequest(ctx, tx, id, false)
	if err != nil {
		return false, err
	}
	fs, err := s.requestFacts(ctx, tx, req)
	if err != nil {
		return false, err
	}
	ready, err := s.approvedOnUndo(ctx, tx, req, items(fs), actor)
	if err != nil || !ready {
		return false, err
	}
	why := fmt.Sprintf("no approval needed once the payload edit was undone: class %s asks for none (policy version %s)", req.Class, req.PolicyVersion)
	return true, s.approve(ctx, tx, &req, actor, meta, s.cfg.Now(), why)
}

// approvedOnUndo decides whether request req, waiting for approval, is
// approved once an edit of it is undone: the one judgement of it, for the
// undo (approveIfReady) and for the page that says beforehand what the
// undo does (undoPreviews). live are its live items as the undo leaves
// them; it is judged with no approvals (an undo deletes them), the
// request edited while one of live holds an edit, its requester as
// recorded and as the directory has them now (req as getRequest reads it:
// a fix marker either recorded asks an approver, FixedByRequester), as
// actor, at the time approvals are judged at (judgedAt), by the active rules only
// (Decision.Ready): a process whose policy is not the active version
// judges nothing, and the conflict of activeTable is returned.
func (s *Service) approvedOnUndo(ctx context.Context, q querier, req Request, live []replaypolicy.Item, actor quarantine.Actor) (bool, error) {
	table, err := s.activeTable(ctx, q)
	if err != nil {
		return false, err
	}
	now, err := s.judgedAt(ctx, q)
	if err != nil {
		return false, err
	}
	pr := policyRequest(req, nil)
	pr.PayloadEdited = slices.ContainsFunc(live, func(it replaypolicy.Item) bool { return it.PayloadEdited })
	return replaypolicy.DecideItems(table, live, actor, pr, now).Ready, nil
}

// UndoPreview is what undoing the edit of an item would do as things
// stand, for the page that offers the undo to say before the press.
type UndoPreview struct {
	// Refused says why the undo is refused ("" when it is not): in a
	// request waiting for approval, an item the rules refuse without its
	// edit keeps it (JudgeUndo); and on a process whose policy is not the
	// active version (Stale), no undo of such a request is judged
	// (approvedOnUndo), whatever the item.
	Refused string
	Stale   bool
	// LeavesOut says, in a draft, why the rules would leave the item out
	// without its edit ("" when it would go).
	LeavesOut string
	// Approves: the request waits for approval only because of this edit;
	// undone, it needs none and is approved at once, its jobs written for
	// the workers to publish (approveIfReady).
	Approves bool
	// LeftOut says why the item was left out, for an item that holds an
	// edit all the same ("" for a live item): the edit sends nothing, and
	// undoing it is all its form offers. In a draft the undo puts it back
	// and judges it again (LeavesOut); in a request waiting for approval it
	// stays out.
	LeftOut string
}

// undoPreviews judges, for each edited item of fs (undoFacts of req, a
// draft or a request waiting for approval: its live items and its
// left-out items holding an edit), what undoing its edit would do
// (UndoPreview), by dead letter, as ChangePayload judges it: the item with
// the payload received (undoEdit, then judgeAgain in a draft, with a
// left-out item put back among the live ones; JudgeUndo of a live item
// otherwise), and the request without this edit and with no approvals,
// which the undo deletes, as actor (its requester) (approvedOnUndo). Only
// errors reading the database are returned.
func (s *Service) undoPreviews(ctx context.Context, q querier, req Request, fs []itemFact, actor quarantine.Actor) (map[int64]UndoPreview, error) {
	table := s.cfg.Policy()
	out := map[int64]UndoPreview{}
	var stale error // approvedOnUndo's conflict: this process judges no undo
	for at, f := range fs {
		if !f.item.PayloadEdited {
			continue
		}
		// The live items as the undo leaves them, this one among them
		// (at k) in a draft, or while it is live.
		var without []replaypolicy.Item
		k := -1
		for i, g := range fs {
			switch {
			case i == at && (f.skipped == "" || req.Status == StatusDraft):
				k = len(without)
				without = append(without, g.unedited())
			case i != at && g.skipped == "":
				without = append(without, g.item)
			}
		}
		p := UndoPreview{LeftOut: f.skipped}
		switch req.Status {
		case StatusDraft:
			verdicts := make([]replaypolicy.Verdict, len(without))
			for i, it := range without {
				verdicts[i] = replaypolicy.JudgeItem(table, it, replaypolicy.AtDraft)
			}
			if v := replaypolicy.JudgeDraft(table, req.Class, req.Tenant, true, verdicts)[k]; v.Outcome != replaypolicy.Go {
				p.LeavesOut = v.Reason
			}
		case StatusPendingApproval:
			if k >= 0 {
				if v := replaypolicy.JudgeUndo(false, replaypolicy.JudgeItem(table, without[k], replaypolicy.AtRequest)); v.Outcome != replaypolicy.Go {
					p.Refused = v.Reason
					break
				}
			}
			approves, err := false, stale
			if stale == nil {
				approves, err = s.approvedOnUndo(ctx, q, req, without, actor)
			}
			switch {
			case quarantine.ErrorCode(err) == quarantine.ECONFLICT:
				stale = err // the same for every item: the policy file is read again once, not per item
				p.Refused, p.Stale = quarantine.ErrorMessage(err), true
			case err != nil:
				return nil, err
			}
			p.Approves = approves
		}
		out[f.deadLetterID] = p
	}
	return out, nil
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
	send := sendFacts(hs, nil, "", int64(size), s.cfg.MaxPayload, sentAs{deadLetterID: deadLetterID, requestID: id, edited: true}, msgID, opID, corrID)
	send.HasBadHeader, send.BadHeader, send.AlteredHeader, send.BrokerKeyText = false, "", "", "" // judged with the item; the edit is about its size
	if v := replaypolicy.JudgeSend(replaypolicy.Verdict{Rule: -1}, send); v.Outcome != replaypolicy.Go {
		return refuse(v, quarantine.EINVALID)
	}
	return nil
}

// dropApprovals takes the approvals of request req out when an edit of
// dead letter deadLetterID changes its intent, and audits each that still
// counted as voided (audit.ActionReplayApprovalVoid), in the edit's
// transaction: the auditor finds who had approved, and why that approval
// is gone, under the approval's own action.
func dropApprovals(ctx context.Context, tx pgx.Tx, req *Request, actor quarantine.Actor, meta quarantine.RequestMeta, deadLetterID int64) error {
	rows, err := tx.Query(ctx, deleteApprovals, req.ID)
	if err != nil {
		return err
	}
	var events []audit.Event
	var ap Approval
	var counted bool
	_, err = pgx.ForEachRow(rows, []any{&ap.Approver.Issuer, &ap.Approver.Subject, &ap.Approver.Email, &ap.At, &counted}, func() error {
		if !counted {
			return nil // voided before, and audited then
		}
		e := approvalVoidEvent(actor, meta, req, ap, fmt.Sprintf(
			"the payload of dead letter %d was edited: this approval was of the request as it was before, and no longer counts", deadLetterID))
		e.After = map[string]any{"counts": false, "edited": deadLetterID}
		events = append(events, e)
		return nil
	})
	if err != nil {
		return err
	}
	_, err = audit.AppendBatch(ctx, tx, events)
	return err
}
