package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// ErrConfirmation marks Approve's refusal of a typed confirmation that is
// missing or wrong (an invalid error): the page shows it at the field.
var ErrConfirmation = errors.New("typed confirmation refused")

// ApproveInput is what an approver sends: the intent they reviewed, the
// request's version they read it at and, for classes with typed
// confirmation, what they typed.
type ApproveInput struct {
	IntentHex string
	// Version is Request.Version as the approver's page read it with the
	// intent: an edit there and back makes the same intent again, but the
	// approver read another edit reason than the request now gives. 0
	// says nothing, and only the intent judges (replaypolicy.JudgeRead);
	// the web form always sends one, and one that sent none or no number
	// is negative, refused.
	Version      int
	Confirmation string
}

// An approver signs off once; a second click finds their row. An
// approval that no longer counts (replaypolicy.ApprovalLapsed: expired,
// or voided when its approver had lost the right) is given again in its
// place, under the address the approver has now; the one it was given
// under before stays in identity_addresses (seen: Request.KnownAs). The
// approver stays one of the request's people for good
// (replay_request_approvers): an edit of the payload deletes the
// approvals, and their approvers' addresses may be what links two others
// of its people (knownAsColumn). An approval is dated by this console's
// clock, never after the database's (least: a console whose clock runs
// ahead must not date an approval that lasts longer; judgedAt).
const insertApproval = `WITH approver AS (
        INSERT INTO replay_request_approvers (request_id, approver_issuer, approver_subject) VALUES ($1, $2, $3)
        ON CONFLICT DO NOTHING) -- approved it before
    INSERT INTO replay_approvals (request_id, approver_issuer, approver_subject, approver_email,
        approver_email_verified, intent_hash, approved_at)
    VALUES ($1, $2, $3, $4, $5, $6, least($7::timestamptz, now()))
    ON CONFLICT (request_id, approver_issuer, approver_subject) DO UPDATE
        SET approver_email = EXCLUDED.approver_email, approver_email_verified = EXCLUDED.approver_email_verified,
            intent_hash = EXCLUDED.intent_hash, approved_at = EXCLUDED.approved_at, voided_at = NULL, void_reason = ''
        WHERE $8::boolean -- only an approval that lapsed (or was voided) is renewed; a second click changes nothing`

// Approve records actor's approval of the exact intent they reviewed. It
// returns forbidden for the requester (anyone who may be them as signed
// in: the request's people as it recorded them, as the directory has them
// now, or under any address the console has seen them with; also audited
// as denied), invalid for an actor whose own account makes them the
// requester (as the directory has it now, or under an address the console
// has seen their identity with: asTheyAreNow; the approval would count
// for nothing, judgeApprovals judging each approver so; also audited as
// denied), a
// conflict when the request is not waiting for approval, its intent
// changed, it changed since the version the approver read (in.Version:
// an edit, even one back to the same intent; refused and not audited, as
// a changed intent is), its requester lost the right to request it, the
// rules refuse it, or the actor already approved (under this identity, or as someone
// who may be them, replaypolicy.ApprovalStands: also audited as denied),
// and invalid
// for a missing typed confirmation (ErrConfirmation). The approval that
// completes the requirement approves the request and writes its jobs in
// the same transaction.
func (s *Service) Approve(ctx context.Context, id int64, actor quarantine.Actor, in ApproveInput, meta quarantine.RequestMeta) (replaypolicy.Decision, error) {
	var d replaypolicy.Decision
	var denied string // the tenant of a request the actor may not approve
	// What decides a refusal is read detached from the client (judging): a
	// client that left is refused, and recorded, all the same.
	tctx, jctx, cancel := judging(ctx)
	defer cancel()
	st, err := s.standingOf(jctx, id, actor)
	if err != nil {
		return d, fmt.Errorf("approve replay %d: %w", id, err)
	}
	// The request first, then only its own approval and jobs, and the audit
	// chain: no lock another transaction takes before one of those, so no
	// lock race to lose (pgx.BeginFunc, not dlq.InTx).
	err = pgx.BeginFunc(tctx, s.pool, func(tx pgx.Tx) error {
		req, err := getRequest(jctx, tx, id, true)
		if err != nil {
			return err
		}
		if v := req.MayApprove(actor, quarantine.Actor{}); v.Outcome != replaypolicy.Go {
			denied = req.Tenant // the requester, as the request knows its people
			return quarantine.Errorf(ownRequestCode(req, actor), "%s", v.Reason)
		}
		// The approver as the count will read them (judgeApprovals: as the
		// directory has them now, under every address seen), read up front:
		// one that makes them the requester is refused now, not recorded to
		// count for nothing. Only their own account's other names say so,
		// which their session could not tell them: the page says why (422),
		// where the requester is simply forbidden.
		var actorNow quarantine.Actor
		if req, actorNow, err = asTheyAreNow(jctx, tx, req, actor); err != nil {
			return err
		}
		if v := req.MayApprove(actor, actorNow); v.Outcome != replaypolicy.Go {
			denied = req.Tenant
			return quarantine.Errorf(quarantine.EINVALID, "%s", v.Reason)
		}
		if req.Status != StatusPendingApproval {
			return quarantine.Errorf(quarantine.ECONFLICT, "the request is %s, not waiting for approval", strings.ReplaceAll(string(req.Status), "_", " "))
		}
		if _, err := s.activeTable(tctx, tx); err != nil {
			return err // judged by the active rules, or not at all
		}
		if err := judgeRead(req, in.IntentHex, in.Version); err != nil {
			return err
		}
		if err := s.voidLostApprovals(tctx, tx, &req, actor, meta, st); err != nil {
			return err
		}
		before, err := s.decide(tctx, tx, req, actor)
		if err != nil {
			return err
		}
		if before.Requirement == replaypolicy.Refused {
			return quarantine.Errorf(quarantine.ECONFLICT, "%s", before.Reason)
		}
		if v := replaypolicy.Confirmed(before.Confirmation, in.Confirmation); v.Outcome != replaypolicy.Go {
			return fmt.Errorf("%w: %w", ErrConfirmation, quarantine.Errorf(quarantine.EINVALID, "%s", v.Reason))
		}
		as, err := approvals(jctx, tx, req.ID)
		if err != nil {
			return err
		}
		at, err := s.judgedAt(jctx, tx)
		if err != nil {
			return err
		}
		if who, ok := approvedAsAnother(s.cfg.Policy(), req, as, actor, at); ok {
			denied = req.Tenant // separation of duties, as for the requester: audited as denied
			return quarantine.Errorf(quarantine.ECONFLICT, "your approval under another account (%s) already counts for this request: one person approves once",
				who.Attribution())
		}
		if err := ctx.Err(); err != nil {
			return err // judged, and not refused: a client that left changes nothing (the voids above roll back too)
		}
		lapsed := replaypolicy.ApprovalLapsed(s.cfg.Policy(), policyRequest(req, as), actor, at)
		tag, err := tx.Exec(ctx, insertApproval, req.ID, actor.Issuer, actor.Subject, actor.Email, actor.EmailVerified, req.IntentHash, s.cfg.Now(), lapsed)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return quarantine.Errorf(quarantine.ECONFLICT, "you already approved this request")
		}
		if err := seen(ctx, tx, actor); err != nil {
			return err
		}
		if d, err = s.decide(ctx, tx, req, actor); err != nil {
			return err
		}
		e := requestEvent(actor, meta, "replay.approve", &req)
		e.After = map[string]any{"intent": req.IntentHex(), "approvals": d.ApprovalsHave, "needed": d.ApprovalsNeeded}
		if err := auditItems(ctx, tx, req.ID, e, "replay.item.approved", nil); err != nil {
			return err
		}
		if d.Ready {
			why := fmt.Sprintf("approvals complete: %d of %d", d.ApprovalsHave, d.ApprovalsNeeded)
			return s.approve(ctx, tx, &req, actor, meta, s.cfg.Now(), why)
		}
		return nil
	})
	if denied != "" {
		err = s.auditDenied(ctx, actor, meta, "replay.approve", denied, id, err)
	}
	if err != nil {
		return d, fmt.Errorf("approve replay %d: %w", id, err)
	}
	return d, nil
}

// RejectInput is what an approver sends to reject a request: the intent
// and the request's version they read it at, as ApproveInput's (judged
// alike: judgeRead), and why.
type RejectInput struct {
	IntentHex string
	// Version is Request.Version as the approver's page read it: 0 says
	// nothing, and only the intent judges (ApproveInput.Version).
	Version int
	Reason  string
}

// Reject closes a request waiting for approval, with a reason; its dead
// letters go back to quarantined. It returns forbidden for anyone who may
// be the requester (replaypolicy.MayApprove, the actor judged as Approve
// judges them, asTheyAreNow: whoever may not approve a request may not
// reject it either; also audited as denied), who cancels
// it instead, a conflict when the request is not waiting for approval or
// changed since the intent and version the approver read (judgeRead, as
// Approve refuses it: a rejection judges what its approver read, and its
// reason would otherwise close a version they never saw; refused and not
// audited), and invalid without a reason.
func (s *Service) Reject(ctx context.Context, id int64, actor quarantine.Actor, in RejectInput, meta quarantine.RequestMeta) error {
	reason := strings.TrimSpace(in.Reason)
	if reason == "" {
		return fmt.Errorf("reject replay %d: %w", id, quarantine.Errorf(quarantine.EINVALID, "a reason is required"))
	}
	var denied string // the tenant of a request the actor may not reject
	tctx, jctx, cancel := judging(ctx)
	defer cancel()
	err := dlq.InTx(tctx, s.pool, func(tx pgx.Tx) error {
		denied = "" // a run again starts afresh
		req, err := getRequest(jctx, tx, id, true)
		if err != nil {
			return err
		}
		var actorNow quarantine.Actor
		if req, actorNow, err = asTheyAreNow(jctx, tx, req, actor); err != nil {
			return err
		}
		if v := req.MayApprove(actor, actorNow); v.Outcome != replaypolicy.Go {
			denied = req.Tenant
			return quarantine.Errorf(quarantine.EFORBIDDEN, "you cannot reject your own request: another approver does, or you cancel it")
		}
		if err := ctx.Err(); err != nil {
			return err // judged, and not refused: a client that left changes nothing
		}
		if req.Status != StatusPendingApproval {
			return quarantine.Errorf(quarantine.ECONFLICT, "the request is %s", req.Status)
		}
		if err := judgeRead(req, in.IntentHex, in.Version); err != nil {
			return err
		}
		if err := seen(ctx, tx, actor); err != nil {
			return err
		}
		return s.close(ctx, tx, &req, StatusRejected, reason, actor, meta, "replay.reject")
	})
	if denied != "" {
		err = s.auditDenied(ctx, actor, meta, "replay.reject", denied, id, err)
	}
	if err != nil {
		return fmt.Errorf("reject replay %d: %w", id, err)
	}
	return nil
}

// judgeRead returns a conflict when req is not the request an approver
// read at intentHex and version: its intent changed
// (replaypolicy.JudgeIntent), or its version did, even by edits back to
// the same intent, whose reasons they never read (replaypolicy.JudgeRead).
// Approve and Reject both judge by it: each is a judgement of what the
// approver read.
func judgeRead(req Request, intentHex string, version int) error {
	if v := replaypolicy.JudgeIntent(intentHex, req.IntentHex()); v.Outcome != replaypolicy.Go {
		return refuse(v, quarantine.ECONFLICT)
	}
	if v := replaypolicy.JudgeRead(version, req.Version); v.Outcome != replaypolicy.Go {
		return refuse(v, quarantine.ECONFLICT) // refused as a changed intent is
	}
	return nil
}

// approvedAsAnother returns the approver of an approval of req (as, at at)
// that still counts, given under another identity than actor's by someone
// who may be actor (replaypolicy.ApprovalStands: each of them also under
// every address the console has seen their identity with, req.KnownAs,
// the actor's among them: asSeenBy; so an approval renewed under a new
// address still stands for the old one, and one given to an earlier
// request under an address stands for it too); ok
// is false when there is none. A second approval of one person counts for nothing, so Approve
// refuses it rather than record and audit it as an approval. The actor's
// own identity is left to insertApproval (a second click, or one that
// renews a lapsed approval).
func approvedAsAnother(t *replaypolicy.Table, req Request, as []Approval, actor quarantine.Actor, at time.Time) (quarantine.Actor, bool) {
	for _, a := range as {
		if a.Approver.SameIdentity(actor) {
			continue
		}
		if replaypolicy.ApprovalStands(t, policyRequest(req, []Approval{a}), actor, at) {
			return a.Approver, true
		}
	}
	return quarantine.Actor{}, false
}

// ownRequestCode is how Approve refuses an actor the request knows as its
// requester: forbidden for the requester as the request knows them
// (replaypolicy.KnowsAsRequester); invalid, the page saying why, when only
// the other names of the actor's own account make them one.
func ownRequestCode(req Request, actor quarantine.Actor) string {
	if replaypolicy.KnowsAsRequester(policyRequest(req, nil), actor) {
		return quarantine.EFORBIDDEN
	}
	return quarantine.EINVALID
}
