package replay

import (
	"context"
	"time"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Ledger read: has another job already replayed an identity of the item
// (its message id where dedupe rules apply, its operation id where
// same_operation rules do; NULL for one that does not count), does
// another job of it wait for a person because it may have been published
// (needs_reconciliation: possibly replayed), and is another job of it in
// flight: a publish of it may have landed (first_attempt_at) and nothing
// settled it yet (it runs: pending, claimed, deferred or unknown)? Another
// job of the same request counts as one of another request does: two dead
// letters of one identity in one request (a consumer's own dead letter and
// the MAX_DELIVERIES capture of the same message) are one effect. The
// ledger's unique keys hold the identities' SHA-256 (quarantine_key, any
// length fits; migration 0008), so the lookups say it the same way; the
// jobs that wait for a person are few (replay_jobs_unsettled_idx); the
// jobs in flight are found from the dead letters of the identity (their
// hash indexes on the ids' bounded keys), then their items and jobs by key.
const ledgerHas = `SELECT EXISTS (SELECT 1 FROM replay_ledger
        WHERE tenant = $1 AND job_id <> $4 -- any job but this one
          AND (($2::text IS NOT NULL AND dedupe_key AND quarantine_key(msg_id) = quarantine_key($2))
               OR ($3::text IS NOT NULL AND operation_key AND quarantine_key(operation_id) = quarantine_key($3)))),
        coalesce((SELECT min(j.request_id) FROM replay_jobs j JOIN replay_requests r ON r.id = j.request_id
            JOIN replay_items i ON i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id
            WHERE j.state = 'needs_reconciliation' AND r.tenant = $1 AND j.id <> $4
              AND (quarantine_key(i.msg_id) = quarantine_key($2) OR quarantine_key(i.operation_id) = quarantine_key($3))), 0),
        coalesce(least(
            (SELECT min(j.request_id) FROM dead_letters d
                JOIN replay_items i ON i.dead_letter_id = d.id AND i.dead_lettered_at = d.dead_lettered_at
                JOIN replay_jobs j ON j.request_id = i.request_id AND j.dead_letter_id = i.dead_letter_id
                WHERE left(d.msg_id, 256) = left($2, 256) AND d.tenant = $1 AND quarantine_key(i.msg_id) = quarantine_key($2)
                  AND j.id <> $4 AND j.first_attempt_at IS NOT NULL AND j.state IN ('pending', 'claimed', 'deferred', 'unknown')),
            (SELECT min(j.request_id) FROM dead_letters d
                JOIN replay_items i ON i.dead_letter_id = d.id AND i.dead_lettered_at = d.dead_lettered_at
                JOIN replay_jobs j ON j.request_id = i.request_id AND j.dead_letter_id = i.dead_letter_id
                WHERE left(d.operation_id, 256) = left($3, 256) AND d.operation_id <> '' AND d.tenant = $1
                  AND quarantine_key(i.operation_id) = quarantine_key($3)
                  AND j.id <> $4 AND j.first_attempt_at IS NOT NULL AND j.state IN ('pending', 'claimed', 'deferred', 'unknown'))), 0)`

// judge decides, just before publishing, what becomes of each job: the
// replay rules judge the request (once per request), the item (its dead
// letter as the claim read it, its payload), the job on facts gathered
// here (the costly ones only when a rule asks for them), and then whether
// the target stream's duplicate window lets it go now. A job the rules do
// not let go gets its state; one not judged by until is released (the
// facts are gathered under a deadline of until).
func (w *Worker) judge(ctx context.Context, jobs []*job, until time.Time) {
	// Every fact is gathered by until: a slow service or database cannot
	// hold the judging past the part of the lease a claim publishes in
	// (the publish gate refuses a job whose lease ran out all the same).
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	table := w.svc.cfg.Policy()
	runs := map[int64]replaypolicy.Verdict{}
	held := map[string]bool{} // identities a job of this claim goes first with
	for _, j := range jobs {
		if j.state != "" {
			continue
		}
		if time.Now().After(until) {
			j.state, j.result = JobPending, "released: the lease was running out" // a slow service ate the time
			continue
		}
		run, seen := runs[j.requestID]
		if !seen {
			run = replaypolicy.JudgeRun(table, w.runFacts(ctx, j), w.svc.cfg.Now())
			runs[j.requestID] = run
		}
		if run.Outcome != replaypolicy.Go {
			j.unsent(run)
			continue
		}
		iv := replaypolicy.JudgeItem(table, j.item(w.svc.cfg), replaypolicy.AtExecution)
		if iv.Outcome != replaypolicy.Go {
			j.unsent(iv) // the dead letter is no longer this request's, or the payload is not the approved one
			continue
		}
		j.union = iv.Classing.Union
		f := j.facts()
		if err := w.svc.cfg.Subjects.For(j.tenant, j.subject); err != nil {
			f.SubjectRefusal = err.Error()
		}
		v := replaypolicy.JudgeJob(f)
		for v.Needs != replaypolicy.NeedNothing {
			switch v.Needs {
			case replaypolicy.NeedLedger:
				f.Ledger = w.ledger(ctx, j, held)
			case replaypolicy.NeedRevalidation:
				f.Revalidation = w.revalidate(ctx, j)
			}
			v = replaypolicy.JudgeJob(f)
		}
		if v.Outcome != replaypolicy.Go {
			j.unsent(v)
			continue
		}
		j.window = w.window(ctx, j.subject)
		if v := replaypolicy.JudgeWindow(j.attempt(w.svc.cfg.WindowMargin), w.svc.cfg.Now()); v.Outcome != replaypolicy.Go {
			j.decide(v) // inside the original's duplicate window, or an unknown outcome past it
		}
	}
}

// facts are what the rules judge of j as a job (JudgeJob, JudgeGate),
// but the facts gathered on demand: its class and the classes its item is
// classed by at execution, and whether a publish of its own may have
// landed.
func (j *job) facts() replaypolicy.Job {
	return replaypolicy.Job{Class: j.class, Union: j.union, Attempted: j.firstAttemptAt != nil}
}

// window is the duplicate window of subject's stream; without a reader,
// none (publishing says whether a stream takes it).
func (w *Worker) window(ctx context.Context, subject string) replaypolicy.Window {
	if w.svc.cfg.Windows == nil {
		return replaypolicy.Window{}
	}
	return w.svc.cfg.Windows.Window(ctx, subject)
}

// runFacts is what the rules judge of j's request: its state, and the
// current rights of its requester and approvers when the worker checks
// them.
func (w *Worker) runFacts(ctx context.Context, j *job) replaypolicy.Run {
	r := replaypolicy.Run{Tenant: j.tenant, Class: j.class, Union: j.requestUnion, Status: string(j.reqStatus), PolicyVersion: j.policy,
		Requester: j.requester}
	if j.approvedAt != nil {
		r.ApprovedAt = *j.approvedAt
	}
	if w.auth == nil {
		return r
	}
	a := &replaypolicy.Authority{}
	r.Authority = a
	obj := replaypolicy.Object(j.class)
	a.RequesterMay = w.stillAllowed(ctx, j, j.requester, obj, "request")
	as, err := approvals(ctx, w.svc.pool, j.requestID)
	if err != nil {
		a.Unreadable = err.Error()
		return r
	}
	for _, ap := range as {
		a.Approvers = append(a.Approvers, replaypolicy.Standing{Who: ap.Approver, May: w.stillAllowed(ctx, j, ap.Approver, obj, "approve")})
	}
	return r
}

// stillAllowed asks the authority whether who may still do act on obj in
// j's tenant; a failed lookup counts as no.
func (w *Worker) stillAllowed(ctx context.Context, j *job, who quarantine.Actor, obj, act string) bool {
	ok, err := w.auth.StillAllowed(ctx, who, j.tenant, obj, act)
	return err == nil && ok
}

// ledger is what the replay ledger says of j's identities (Identities:
// each class of its union that keys one). The first job of a claim with an
// identity goes first: a later one waits for the next claim, when the
// ledger will tell.
func (w *Worker) ledger(ctx context.Context, j *job, held map[string]bool) *replaypolicy.Ledger {
	keys := replaypolicy.Identities(j.class, j.union, j.tenant, j.msgID, j.opID)
	for _, k := range keys {
		if held[k] {
			return &replaypolicy.Ledger{HeldEarlier: true}
		}
	}
	for _, k := range keys {
		held[k] = true
	}
	var l replaypolicy.Ledger
	if err := w.svc.pool.QueryRow(ctx, ledgerHas, j.ledgerArgs()...).Scan(ledgerTargets(&l)...); err != nil {
		l.Unreadable = err.Error()
	}
	return &l
}

// ledgerArgs are ledgerHas's arguments for j: its tenant, its message id
// where dedupe rules apply to it and its operation id where same_operation
// rules do (NULL where they do not: that identity does not count), and
// the job.
func (j *job) ledgerArgs() []any {
	c := replaypolicy.Classing{Class: j.class, Union: j.union}
	var msgID, opID *string
	if c.Has(replaypolicy.Dedupe) {
		msgID = &j.msgID
	}
	if c.Has(replaypolicy.SameOperation) {
		opID = &j.opID
	}
	return []any{j.tenant, msgID, opID, j.id}
}

// ledgerTargets are where a row of ledgerHas is scanned to.
func ledgerTargets(l *replaypolicy.Ledger) []any {
	return []any{&l.Replayed, &l.Unsettled, &l.InFlight}
}

// revalidate asks the owning service whether j's original principal may
// still have its effect.
func (w *Worker) revalidate(ctx context.Context, j *job) *replaypolicy.Revalidation {
	if w.reval == nil {
		return &replaypolicy.Revalidation{Unanswered: "no revalidation subject is configured (REVALIDATE_SUBJECT)"}
	}
	allow, reason, err := w.reval.Revalidate(ctx, RevalidateQuery{
		Tenant: j.tenant, ItemType: j.itemType, MsgID: j.msgID, OperationID: j.opID, Principal: j.principal,
		Subject: j.subject, RequestID: j.requestID, DeadLetterID: j.deadLetterID,
	})
	if err != nil {
		return &replaypolicy.Revalidation{Unanswered: err.Error()}
	}
	return &replaypolicy.Revalidation{Allow: allow, Reason: reason}
}
