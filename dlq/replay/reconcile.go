package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Republished: the dead letter is being replayed again (the counters
// follow: dlq.StatusMove).
var markRequested = dlq.StatusMove(waitedForAPerson, `'replay_requested'`, "id")

// waitedForAPerson are the dead letters of ended jobs (jobDeadLetters)
// that wait for a person's decision, locked: only they are settled.
const waitedForAPerson = jobDeadLetters + `
      AND d.status = 'needs_reconciliation' -- only what waited for this person
    FOR UPDATE OF d`

// Found applied by a person: the dead letter is resolved, not replayed
// ("replayed" says the broker stored this replay's publish, invariant 13,
// which nobody knows of it); the job and the ledger still hold it as
// replayed, so no replay sends it again.
var markApplied = dlq.StatusMove(waitedForAPerson, `'resolved'`, "id")

// ReconcileInput is what a person decided about an item whose outcome
// nobody can know, and what they checked.
type ReconcileInput struct {
	Choice replaypolicy.Choice
	Note   string
	// Settled is the episode the person decided about: the item's
	// Settled when their page showed it waiting (nil: not known; the
	// episode it is in now). An item settled "republish" since, whose
	// new attempt's outcome nobody can know either, waits for a decision
	// about that attempt: one about the earlier attempt is a conflict.
	Settled *int32
}

const (
	// The job a person settles, locked: only one that needs them.
	selectUnsettled = `SELECT j.id, j.dead_lettered_at, i.msg_id, i.operation_id, j.settled FROM replay_jobs j
        JOIN replay_items i ON i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id
        WHERE j.request_id = $1 AND j.dead_letter_id = $2 AND j.state = 'needs_reconciliation'
        FOR UPDATE OF j`
	settleJob = `UPDATE replay_jobs SET state = $2, result = $3, updated_at = now(), not_before = now(),
        first_attempt_at = CASE WHEN $2 = 'pending' THEN NULL ELSE first_attempt_at END, -- a person says it did not land
        deferrals = CASE WHEN $2 = 'pending' THEN 0 ELSE deferrals END,
        waited_for = CASE WHEN $2 = 'pending' THEN '' ELSE waited_for END, -- a person's republish waits for no earlier setting
        republished_at = CASE WHEN $2 = 'pending' THEN now() ELSE republished_at END, -- a second send of its event: firstReplayJob
        settled = settled + 1
        WHERE id = $1 AND state = 'needs_reconciliation' -- settled once
          AND ($4::int IS NULL OR settled = $4)` // in the episode the person saw (ReconcileInput.Settled)
	// The effect happened: the ledger holds it as replayed, beside any
	// other replay of its identity (a returned dead letter's, say: the
	// ledger keeps every one, migration 0045). settleJob settles a job
	// once, so its row is written once (its primary key).
	ledgerApplied = `INSERT INTO replay_ledger (job_id, request_id, dead_letter_id, tenant, class, msg_id, operation_id, subject, stream, seq, duplicate,
            dedupe_key, operation_key)
        SELECT j.id, j.request_id, j.dead_letter_id, r.tenant, r.class, i.msg_id, i.operation_id, i.subject, j.pub_stream, j.pub_seq, j.duplicate,
            $2, $3
        FROM replay_jobs j JOIN replay_requests r ON r.id = j.request_id
        JOIN replay_items i ON i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id
        WHERE j.id = $1`
	// Republished: a request that had finished runs again (audited as
	// such when it had finished).
	runAgain = `UPDATE replay_requests SET status = 'running', finished_at = NULL, status_reason = '', version = version + 1
        WHERE id = $1 AND status = 'done_with_problems' -- an approved or running one runs already
        RETURNING id`
	releaseOne = `UPDATE replay_items SET held = false WHERE request_id = $1 AND dead_letter_id = $2 AND held`
)

// Reconcile settles item deadLetterID of request id, whose outcome nobody
// can know (needs_reconciliation), as actor decided after checking the
// target: applied (it counts as replayed), republish (published again
// under the same message id; only while the request still publishes, and
// never for a request that needed two approvers: MayRepublish) or not
// applied (back to quarantine). The route checks that actor may reconcile
// replays of the request's class in its tenant; here, that actor may not
// be its requester, each as signed in or recorded, as the directory has
// them now and under every address the console has seen their identity
// with (MayReconcile, asTheyAreNow: forbidden, audited as denied). It
// returns invalid for a choice the rules refuse (JudgeReconcile; a
// republish of a two-approver item is audited as denied too), a conflict
// when the request publishes nothing more, the item does not wait for a
// decision (settled already, say) or waits for one about a later attempt
// than in.Settled says the person saw (ErrReconcileLaterAttempt),
// not_found for no such item; it is
// audited with the note, and the request ends again as its items now
// count.
func (s *Service) Reconcile(ctx context.Context, id, deadLetterID int64, actor quarantine.Actor, in ReconcileInput, meta quarantine.RequestMeta) error {
	in.Note = strings.TrimSpace(in.Note)
	var denied string // the tenant of a request whose items the actor may not settle
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
		if v := req.MayReconcile(actor, actorNow); v.Outcome != replaypolicy.Go {
			denied = req.Tenant
			return refuse(v, quarantine.EFORBIDDEN)
		}
		if v := replaypolicy.JudgeReconcile(in.Choice, in.Note, string(req.Status), s.publishApprovals(req)); v.Outcome != replaypolicy.Go {
			code := quarantine.EINVALID
			switch v.Check {
			case replaypolicy.CheckDecisionClosed:
				code = quarantine.ECONFLICT
			case replaypolicy.CheckRepublishTwoApprovers:
				// No button offers it (MayRepublish): a crafted attempt to
				// publish a two-approver item on one word, audited as denied.
				denied = req.Tenant
			}
			return refuse(v, code)
		}
		if err := ctx.Err(); err != nil {
			return err // judged, and not refused: a client that left changes nothing
		}
		var jobID int64
		var at time.Time
		var msgID, opID string
		var settled int32
		err = tx.QueryRow(ctx, selectUnsettled, id, deadLetterID).Scan(&jobID, &at, &msgID, &opID, &settled)
		if errors.Is(err, pgx.ErrNoRows) {
			return quarantine.Errorf(quarantine.ECONFLICT, "this item does not wait for a decision (any more): reload the request")
		}
		if err != nil {
			return err
		}
		if in.Settled != nil && *in.Settled != settled {
			return ErrReconcileLaterAttempt
		}
		who := actor.Attribution()
		state, result, mark := JobReplayed, fmt.Sprintf(appliedLead+"%s found: %s", who, in.Note), markApplied
		switch in.Choice {
		case replaypolicy.Republish:
			state, result, mark = JobPending, fmt.Sprintf(notAppliedLead+"%s found (%s): to be published again by a worker, under the same message id", who, in.Note), markRequested
		case replaypolicy.NotApplied:
			// ShownOutcome names it apart from a cancel by this lead.
			state, result, mark = JobCancelled, fmt.Sprintf(notAppliedLead+"%s found (%s): not published again", who, in.Note), markRequeued
		}
		if tag, err := tx.Exec(ctx, settleJob, jobID, state, result, in.Settled); err != nil {
			return err
		} else if tag.RowsAffected() != 1 {
			return quarantine.Errorf(quarantine.ECONFLICT, "this item was settled meanwhile: reload the request")
		}
		if in.Choice == replaypolicy.Applied {
			dedupe, operation, err := s.ledgerKeys(ctx, tx, req, deadLetterID)
			if err != nil {
				return err
			}
			if tag, err := tx.Exec(ctx, ledgerApplied, jobID, dedupe, operation); err != nil {
				return fmt.Errorf("record job %d in the replay ledger: %w", jobID, err)
			} else if tag.RowsAffected() != 1 {
				return fmt.Errorf("record job %d in the replay ledger: %d rows written", jobID, tag.RowsAffected())
			}
		}
		if err := markHeld(ctx, tx, mark, id, []dlq.Key{{ID: deadLetterID, At: at}}); err != nil {
			return err
		}
		var again bool // the request had finished and runs again
		if in.Choice == replaypolicy.Republish {
			rows, err := tx.Query(ctx, runAgain, id)
			if err != nil {
				return err
			}
			moved, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return err
			}
			again = len(moved) > 0
		} else if _, err := tx.Exec(ctx, releaseOne, id, deadLetterID); err != nil {
			return err
		}
		if err := seen(ctx, tx, actor); err != nil {
			return err
		}
		e := requestEvent(actor, meta, "replay.item.reconciled", &req)
		e.ObjectType, e.ObjectID, e.MessageID, e.OperationID, e.Reason = "dead_letter", strconv.FormatInt(deadLetterID, 10), msgID, opID,
			settledReason(in.Choice, in.Note)
		e.Before = map[string]any{"state": JobNeedsReconciliation}
		e.After = map[string]any{"choice": in.Choice, "state": state, "request": id}
		if _, err := audit.Append(ctx, tx, e); err != nil {
			return err
		}
		if again {
			e := requestEvent(actor, meta, audit.ActionReplayRunning, &req)
			e.Reason = fmt.Sprintf("dead letter %d is published again, as %s found: %s", deadLetterID, who, in.Note)
			e.Before = map[string]any{"status": StatusDoneWithProblems}
			e.After = map[string]any{"status": StatusRunning, "dead_letter": deadLetterID, "choice": in.Choice}
			if _, err := audit.Append(ctx, tx, e); err != nil {
				return err
			}
		}
		done, err := finishRequests(ctx, tx, []int64{id}, actor)
		if err != nil {
			return err
		}
		_, err = audit.AppendBatch(ctx, tx, done)
		return err
	})
	if denied != "" {
		err = s.auditDenied(ctx, actor, meta, "replay.item.reconciled", denied, id, err)
	}
	if err != nil {
		return fmt.Errorf("reconcile item %d of replay %d: %w", deadLetterID, id, err)
	}
	return nil
}

// ErrReconcileLaterAttempt is the conflict of a decision about an item's
// unknown outcome made on a page drawn before the item was settled
// "republish" and published again, whose outcome nobody knows either: it
// was about the earlier attempt, and settles nothing.
var ErrReconcileLaterAttempt = quarantine.Errorf(quarantine.ECONFLICT,
	"this item was settled and published again since your page showed it, and nobody can know that attempt's outcome either: "+
		"what you checked was about the earlier one. Nothing was recorded: check the target again and decide about this attempt")

// MayRepublish says whether an item of req that needs reconciliation may
// be settled "not applied, republish" (replaypolicy.JudgeRepublish, with
// the approvals req needed to publish): what the request page offers, and
// what Reconcile lets through.
func (s *Service) MayRepublish(req Request) replaypolicy.Verdict {
	return replaypolicy.JudgeRepublish(string(req.Status), s.publishApprovals(req))
}

// publishApprovals is how many approvers req needed to publish
// (replaypolicy.PublishApprovals: what the rules asked of it at submit,
// its classes under the policy now, and their floor).
func (s *Service) publishApprovals(req Request) int {
	return replaypolicy.PublishApprovals(s.cfg.Policy(), req.Class, req.Classes, req.ApprovalsNeeded)
}

// ledgerKeys says under which identities' rules item deadLetterID of req
// is replayed (the ledger's dedupe_key and operation_key): those of every
// class it is classed by now (Classing.Union), and of the request's class.
// They record how it was judged; "already replayed" asks of every row.
func (s *Service) ledgerKeys(ctx context.Context, q querier, req Request, deadLetterID int64) (dedupe, operation bool, err error) {
	c := replaypolicy.Classing{Class: req.Class}
	fs, err := s.itemFacts(ctx, q, req, deadLetterID)
	if err != nil {
		return false, false, err
	}
	if t := s.cfg.Policy(); t != nil {
		for _, f := range fs {
			it := f.item
			c.Union = t.Classify(replaypolicy.Key{ItemType: it.ItemType, Subject: it.OriginalSubject, ErrorClass: it.ErrorClass, Generation: it.Generation}).Union
		}
	}
	return c.Has(replaypolicy.Dedupe), c.Has(replaypolicy.SameOperation), nil
}

// settledReason is the audit reason of a settlement: the choice, then the
// note ("applied: doc sku-9 is in the index at v12"), so that the log's
// reason column says what was decided as well as why.
func settledReason(choice replaypolicy.Choice, note string) string {
	return strings.ReplaceAll(string(choice), "_", " ") + ": " + note
}
