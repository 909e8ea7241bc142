package replay

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Ledger read, for each job of $1 (with its tenant $2, its message id $3
// and its operation id $4 where the ledger is asked about it: every class
// but rebuildable, replaypolicy.Identities; NULL for one that does not
// count; $5 and $6 pairs of a job and the job of the first replay of an
// origin of its dead letter, readOrigins): which request of another job
// already replayed an identity of it, under any class, but for the first
// replays of its dead letter's origins (ledger.go), does another job of it
// wait for
// a person because it may have been published (needs_reconciliation:
// possibly replayed), and is another job of it in flight: a publish of it
// may have landed (first_attempt_at) and nothing settled it yet (it runs:
// pending, claimed, deferred or unknown)? Another job of the same request
// counts as one of another request does: two dead letters of one identity
// in one request (a consumer's own dead letter and the MAX_DELIVERIES
// capture of the same message) are one effect. One statement for a whole
// claim (or a gate's chunk), planned once, each job's answers by key: the
// identities are compared by their SHA-256 (quarantine_key, any length
// fits; migration 0008), as the items' key indexes hold them; the
// other jobs of the identity are found from its dead letters (their hash
// indexes on the ids' bounded keys), then their items and jobs by key
// (fenced with OFFSET 0: on the statistics of before a large submit, a
// plan scanned the tenant's dead letters or the request's jobs for every
// job of a claim, seconds each).
var ledgerOf = `SELECT u.id,
        ` + jobLedger.replayedByMsg() + `,
        ` + jobLedger.replayedByOp() + `,
        coalesce(o.unsettled, 0), coalesce(o.in_flight, 0)
    FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $7::text[]) AS u(id, tenant, msg_id, op_id, subject)
    LEFT JOIN LATERAL (
        SELECT min(` + anotherTenants("r.tenant = u.tenant", "j.request_id") + `) FILTER (WHERE j.state = 'needs_reconciliation') AS unsettled,
               min(` + anotherTenants("r.tenant = u.tenant", "j.request_id") + `) FILTER (WHERE j.first_attempt_at IS NOT NULL AND j.state IN ('pending', 'claimed', 'deferred', 'unknown')) AS in_flight
        FROM (SELECT i.request_id, i.dead_letter_id, true AS on_subject FROM replay_items i WHERE quarantine_key(i.msg_id) = quarantine_key(u.msg_id)
                  AND i.subject = u.subject -- a message id is its subject's (replaypolicy.Identity), in any tenant (replayedByMsg)
              UNION ALL
              SELECT i.request_id, i.dead_letter_id, false FROM replay_items i
                  WHERE quarantine_key(i.operation_id) = quarantine_key(u.op_id) AND i.operation_id <> ''
              OFFSET 0) i -- the identity's items by their key indexes (migration 0026), and nothing else
        CROSS JOIN LATERAL (SELECT j.id, j.request_id, j.state, j.first_attempt_at FROM replay_jobs j
            WHERE j.request_id = i.request_id AND j.dead_letter_id = i.dead_letter_id OFFSET 0) j -- the item's job by its key
        JOIN replay_requests r ON r.id = j.request_id
        WHERE (i.on_subject OR r.tenant = u.tenant) AND j.id <> u.id
    ) o ON true`

// jobLedger are ledgerOf's terms of the "already replayed" question: any
// job but this one, and not the first replay of an origin of its dead
// letter (as readOrigins read them).
var jobLedger = ledgerTerms{tenant: "u.tenant", subject: "u.subject", msgID: "u.msg_id", opID: "u.op_id", job: "u.id",
	origin: "EXISTS (SELECT 1 FROM unnest($5::bigint[], $6::bigint[]) AS a(job, origin) WHERE a.job = u.id AND a.origin = l.job_id)"}

// selectStarted says whether a publish of a job of request $1 may have
// landed, in any claim (replaypolicy.Run.Started), and whether that is not
// known yet (Run.StartUnsettled). A publish gate marks a job attempted
// (first_attempt_at) when it reserves its slot, before the worker checks
// the approval's expiry once more and sends it; an answer saying it did
// not land clears the mark, and so does the worker's release of a job it
// did not send. So a marked job whose claim ended (the worker recorded an
// outcome, or its lease ran out: it died, perhaps after the send) may have
// been published; one a live claim holds (its lease runs) may yet be sent,
// or not: its worker sends it only while the approval holds, and has not
// said. Two reads of the request's jobs by its index: while the request is
// approved and not yet running, few are marked.
//
// The third column says whether a job of it was deferred for the target's
// duplicate window (Run.Deferred): it waits deferred now, or the broker
// dropped a publish of it as a duplicate of a message not ours before
// (deferrals); a job of this claim that waited deferred before it is one
// too (job.prevState).
const selectStarted = `SELECT
    EXISTS (SELECT 1 FROM replay_jobs WHERE request_id = $1 AND first_attempt_at IS NOT NULL
            AND (state <> 'claimed' OR lease_until IS NULL OR lease_until <= now())), -- its claim ended: it may have landed
    EXISTS (SELECT 1 FROM replay_jobs WHERE request_id = $1 AND state = 'claimed' AND first_attempt_at IS NOT NULL
            AND lease_until > now()), -- a live claim marked it and has not said whether it sent it
    EXISTS (SELECT 1 FROM replay_jobs WHERE request_id = $1 AND (state = 'deferred' OR deferrals > 0)) -- the console chose to wait for the window`

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
	var hand inHand // a panic while a job is judged is that job's
	defer hand.blame()
	table := w.svc.cfg.Policy()
	runs := map[int64]replaypolicy.Verdict{}
	people := map[int64]replaypolicy.Run{} // by request: its facts, for the people its items are judged with
	stamps := map[int64]*string{}          // by request: the people's rights as the run was judged on (authorityStamp)
	lapses := map[int64]time.Time{}        // by request: when a yes of the rights it was judged on lapses with time (rightsLapsed)
	approvals := map[int64]approvalClock{} // by request: when its approval stops holding, as judged (approvalHolds)
	started := map[int64]bool{}            // by request: a job of it in this claim was marked attempted (else selectStarted asks of every claim)
	deferred := map[int64]bool{}           // by request: a job of it in this claim waited deferred before it
	for _, j := range jobs {
		if j.firstAttemptAt != nil {
			started[j.requestID] = true
		}
		if j.prevState == JobDeferred || j.deferrals > 0 {
			deferred[j.requestID] = true
		}
	}
	// The request's rules and the item's first, for every job: they say
	// which jobs the ledger is asked about, all in one read.
	var keyed []*job
	var clock claimClock // the database's clock, read once for the claim
	for _, j := range jobs {
		hand.j = j
		if j.state != "" {
			continue
		}
		if time.Now().After(until) {
			j.state, j.result = JobPending, releasedLease // a slow service ate the time
			continue
		}
		run, seen := runs[j.requestID]
		if !seen {
			if table.Stale(j.policy) && !j.policyReplaced {
				// Approved under a version this table is not: either the
				// request's is no longer active (JudgeRun blocks it), or
				// it was activated after this claim's check, and the table
				// this process holds is the stale one. activeTable reads
				// the file again then: when it has the active version, the
				// rest of the claim is judged by it; when not, the job
				// waits for a process that holds it, instead of being
				// blocked for good. Asked before the run's facts are
				// read: which approvals count, and whose rights are asked,
				// are the table's (review round 43).
				active, err := w.svc.activeTable(ctx, w.svc.pool)
				switch {
				case quarantine.ErrorCode(err) == quarantine.ECONFLICT:
					j.state, j.result = JobPending, releasedPolicy
					continue
				case err != nil:
					j.state, j.result = JobPending, releasedLease // judged at the next claim
					continue
				}
				table = active
			}
			facts, stamp, lapse, err := w.runFacts(ctx, table, j)
			if err != nil {
				j.state, j.result = JobPending, releasedLease // judged at the next claim
				continue
			}
			stamps[j.requestID], lapses[j.requestID] = stamp, lapse
			facts.Started, facts.Deferred = started[j.requestID], deferred[j.requestID]
			if !facts.Started && !facts.Deferred && j.reqStatus == StatusApproved {
				// A job of it in another worker's claim may have been
				// published: its worker marked it attempted and died before
				// it recorded, or it holds the job still and has not said.
				if err := w.svc.pool.QueryRow(ctx, selectStarted, j.requestID).Scan(&facts.Started, &facts.StartUnsettled, &facts.Deferred); err != nil {
					j.state, j.result = JobPending, releasedLease // judged at the next claim
					continue
				}
			}
			at, err := clock.judged(ctx, w.svc)
			if err != nil {
				j.state, j.result = JobPending, releasedLease // judged at the next claim
				continue
			}
			run = replaypolicy.JudgeRun(table, facts, at)
			runs[j.requestID], people[j.requestID] = run, facts
			approvals[j.requestID] = approvalClock{lapse: replaypolicy.ApprovalLapse(table, facts), at: at, read: time.Now(),
				settingWaitOver: replaypolicy.Lapsed(replaypolicy.SettingWaitEnds(table, facts), at)}
		}
		j.stamp, j.rightsLapse, j.approval = stamps[j.requestID], lapses[j.requestID], approvals[j.requestID]
		if run.Outcome != replaypolicy.Go {
			j.unsent(run)
			continue
		}
		if facts := people[j.requestID]; facts.Authority != nil {
			j.requesterNow, j.knownAs = facts.Authority.RequesterNow, facts.KnownAs
		}
		j.others = replaypolicy.OthersApproved(people[j.requestID])
		iv := replaypolicy.JudgeItem(table, j.item(w.svc.cfg), replaypolicy.AtExecution)
		if iv.Outcome != replaypolicy.Go {
			j.unsent(iv) // the dead letter is no longer this request's, or the payload is not the approved one
			continue
		}
		j.union = iv.Classing.Union
		if len(replaypolicy.Identities(j.class, j.union, j.tenant, j.subject, j.msgID, j.opID)) > 0 {
			keyed = append(keyed, j)
		}
	}
	hand.j = nil
	var ledgers map[int64]*replaypolicy.Ledger
	if err := pgx.BeginTxFunc(ctx, w.svc.pool, workerTx, func(tx pgx.Tx) error {
		ledgers = w.readLedgers(ctx, tx, keyed)
		return nil
	}); err != nil {
		ledgers = unreadLedgers(keyed, err)
	}
	held := holdIdentities(keyed) // identities a job of this claim goes first with, by job
	for _, j := range jobs {
		hand.j = j
		if j.state != "" {
			continue
		}
		if time.Now().After(until) {
			j.state, j.result = JobPending, releasedLease // a slow service ate the time
			continue
		}
		var refusal string
		if err := w.svc.cfg.Subjects.For(j.tenant, j.subject); err != nil {
			refusal = err.Error()
		}
		if j.waitedFor != "" && !j.approval.settingWaitOver && w.hasSetting(j.waitedFor, refusal) {
			j.waitedFor = "" // a worker that has the setting took it in time: its wait for one ended
		}
		f := j.facts()
		f.SubjectRefusal = refusal
		v := replaypolicy.JudgeJob(f)
		for v.Needs != replaypolicy.NeedNothing && j.state == "" {
			switch v.Needs {
			case replaypolicy.NeedLedger:
				f.Ledger = ledgerFor(j, held, ledgers)
			case replaypolicy.NeedRevalidation:
				f.Revalidation = w.revalidate(ctx, j)
				if ctx.Err() != nil {
					// The worker stops, or the claim's time ran out, while
					// the service was asked: that is not its answer.
					j.state, j.result = JobPending, releasedBy(ctx)
				}
			}
			v = replaypolicy.JudgeJob(f)
		}
		if j.state != "" {
			continue
		}
		if v.Outcome != replaypolicy.Go {
			j.unsent(v)
			j.appliedTwin = j.state == JobSkipped && appliedTwin(v, f.Ledger)
			continue
		}
		j.window = w.jobWindow(ctx, j) // a retry's read afresh
		a := j.attempt(w.svc.cfg.WindowMargin)
		at, err := clock.window(ctx, w.svc, j.firstAttemptAt == nil)
		if err != nil {
			j.state, j.result = JobPending, releasedLease // judged at the next claim
			continue
		}
		v = replaypolicy.JudgeWindow(a, at)
		if v.Needs == replaypolicy.NeedCopies {
			// Past the window as the copies' creation says, but a copy
			// made since the original copies it when it catches up:
			// read when it did (a window reader is set: there are
			// copies).
			j.window = w.svc.cfg.Windows.LateCopies(ctx, a)
			v = replaypolicy.JudgeWindow(j.attempt(w.svc.cfg.WindowMargin), at)
		}
		if v.Outcome != replaypolicy.Go {
			j.decide(v) // inside the original's duplicate window, or an unknown outcome past it
		}
	}
	hand.j = nil
}

// hasSetting says whether this worker has the setting whose check a job
// waited for (replaypolicy.Job.WaitedFor), its subject refused by
// refusal ("": allowed).
func (w *Worker) hasSetting(check, refusal string) bool {
	if check == replaypolicy.CheckNoRevalidator {
		return w.reval != nil
	}
	return refusal == ""
}

// appliedTwin says whether v, a verdict that ends a job unsent, is the
// ledger's for an identity whose replays l holds are all a person's
// finding "applied", none the broker's: the job is skipped, and its dead
// letter is resolved, not replayed (markSkippedApplied).
func appliedTwin(v replaypolicy.Verdict, l *replaypolicy.Ledger) bool {
	return v.Outcome == replaypolicy.Done && v.Check == replaypolicy.CheckLedger && l != nil && l.AppliedOnly
}

// claimClock is the database's clock as a claim reads it, once (at its
// first use), moved on by this process's monotonic clock: what the claim
// judges approvals (judged) and duplicate windows (window) at, without a
// round trip to the database for each request.
type claimClock struct {
	db, read time.Time
}

// dbNow is the database's clock now.
func (c *claimClock) dbNow(ctx context.Context, svc *Service) (time.Time, error) {
	if c.read.IsZero() {
		db, err := dbNow(ctx, svc.pool)
		if err != nil {
			return time.Time{}, err
		}
		c.db, c.read = db, time.Now()
	}
	return c.db.Add(time.Since(c.read)), nil
}

// judged is the time approvals are judged at: the later of this worker's
// clock and the database's (Service.judgedAt's rule).
func (c *claimClock) judged(ctx context.Context, svc *Service) (time.Time, error) {
	db, err := c.dbNow(ctx, svc)
	return later(svc.cfg.Now(), db), err
}

// window is the time a job's duplicate window is judged at: for a first
// attempt, which goes only once the windows that would drop it passed, the
// earlier of this worker's clock and the database's; for a retry, which
// goes only while its first attempt's window still covers it, the later
// (the publish gate judges a retry again on the database's clock). The
// windows count from times the database dated (received_at, for a dead
// letter whose stored time was implausible; a retry's first_attempt_at),
// so a worker whose clock runs ahead would send a first attempt inside a
// copy's window, which drops it while the console says replayed
// (TestRevClock18FastWorkerPublishesInsideACopysWindow). Skew only ever
// makes a job wait.
func (c *claimClock) window(ctx context.Context, svc *Service, first bool) (time.Time, error) {
	db, err := c.dbNow(ctx, svc)
	if err != nil {
		return time.Time{}, err
	}
	if first {
		return earlier(svc.cfg.Now(), db), nil
	}
	return later(svc.cfg.Now(), db), nil
}

// facts are what the rules judge of j as a job (JudgeJob, JudgeGate),
// but the facts gathered on demand: its class and the classes its item is
// classed by at execution, and whether a publish of its own may have
// landed.
func (j *job) facts() replaypolicy.Job {
	return replaypolicy.Job{Class: j.class, Union: j.union, Attempted: j.firstAttemptAt != nil, SettingWaitOver: j.approval.settingWaitOver, WaitedFor: j.waitedFor}
}

// window is the duplicate window of subject's stream; without a reader,
// none (publishing says whether a stream takes it).
func (w *Worker) window(ctx context.Context, subject string) replaypolicy.Window {
	if w.svc.cfg.Windows == nil {
		return replaypolicy.Window{}
	}
	return w.svc.cfg.Windows.Window(ctx, subject)
}

// authorityStamp is what the rights of the people of request $1 rest on
// (authz.Authority reads nothing else): the authorization policy's version
// (bumped by every change of a binding or a policy line) and the directory
// entries of its requester and approvers (identity, email, groups,
// revocation; not when they were last seen, which a refresh changes
// without changing a right). It takes the approvers of all its approvals,
// a superset of those whose rights are judged (the approvals that counted
// when it was approved, runFacts): a change to another's entry only sends
// the jobs to be judged again. A worker reads it before it asks whether they
// still hold their rights, and its publish gate reads it again before each
// publish: a stamp that moved means a right may have been lost since, and
// the jobs go back to the next claim, which asks again. Each person's
// entry is read by its key (OFFSET 0: never a join of the directory).
const authorityStamp = `(SELECT coalesce((SELECT version FROM access_version), 0)::text || '/' || coalesce((
        SELECT md5(string_agg(concat_ws('|', u.issuer, u.subject, u.email, u.email_verified, u.groups::text, u.revoked_at::text),
                              E'\n' ORDER BY u.issuer, u.subject))
        FROM (SELECT q.requester_issuer AS issuer, q.requester_subject AS subject FROM replay_requests q WHERE q.id = $1
              UNION SELECT a.approver_issuer, a.approver_subject FROM replay_approvals a WHERE a.request_id = $1) p
        CROSS JOIN LATERAL (SELECT * FROM user_directory u WHERE u.issuer = p.issuer AND u.subject = p.subject OFFSET 0) u), ''))`

// selectAuthorityStamp reads authorityStamp of request $1.
const selectAuthorityStamp = `SELECT ` + authorityStamp

// selectRunPeople is what separation of duties at execution needs of
// request $1 besides its approvals: how many approvers it needed, and its
// requester as the directory has them now (empty when never seen).
const selectRunPeople = `SELECT r.approvals_needed, coalesce(u.issuer, ''), coalesce(u.subject, ''), coalesce(u.email, ''),
        coalesce(u.email_verified, false)
    FROM replay_requests r LEFT JOIN user_directory u ON u.issuer = r.requester_issuer AND u.subject = r.requester_subject
    WHERE r.id = $1`

// runFacts is what the rules judge of j's request under table t: its
// state, its approvals (those that counted when it was approved bound how
// long it may start, replaypolicy.Run.Counted), and the current rights of
// its requester and of the approvers of those approvals when the worker
// checks them (with the approvals it needed and its people as the
// directory has them now, for separation of duties), with the stamp of
// what those rights rest on (authorityStamp, read before them; nil when
// the worker checks no rights). An error is a failed read of its approvals:
// the request is judged at a later claim.
func (w *Worker) runFacts(ctx context.Context, t *replaypolicy.Table, j *job) (_ replaypolicy.Run, _ *string, lapses time.Time, _ error) {
	r := replaypolicy.Run{Tenant: j.tenant, Class: j.class, Union: j.requestUnion, Status: string(j.reqStatus), PolicyVersion: j.policy,
		PolicyReplaced: j.policyReplaced, Requester: j.requester}
	if j.approvedAt != nil {
		r.ApprovedAt = *j.approvedAt
	}
	req, err := getRequest(ctx, w.svc.pool, j.requestID, false)
	if err != nil {
		return r, nil, lapses, err
	}
	as, err := approvals(ctx, w.svc.pool, j.requestID)
	if err != nil {
		return r, nil, lapses, err
	}
	pr := policyRequest(req, as)
	r.IntentHash, r.RequestedAt, r.Approvals, r.KnownAs = pr.IntentHash, pr.RequestedAt, pr.Approvals, pr.KnownAs
	if w.auth == nil {
		return r, nil, lapses, nil
	}
	a := &replaypolicy.Authority{}
	r.Authority = a
	var stamp string
	if err := w.svc.pool.QueryRow(ctx, selectAuthorityStamp, j.requestID).Scan(&stamp); err != nil {
		a.Unreadable = err.Error()
		return r, nil, lapses, nil
	}
	now := &a.RequesterNow
	if err := w.svc.pool.QueryRow(ctx, selectRunPeople, j.requestID).Scan(&r.ApprovalsNeeded, &now.Issuer, &now.Subject, &now.Email,
		&now.EmailVerified); err != nil {
		a.Unreadable = err.Error()
		return r, nil, lapses, nil
	}
	obj := replaypolicy.Object(j.class)
	a.RequesterMay = w.stillAllowed(ctx, j, j.requester, obj, "request", &lapses)
	// Only the approvals the request's approval rested on: one that had
	// expired, approved another intent or was void by then counted for
	// nothing, and whether its approver may approve now changes nothing.
	for _, ap := range r.Counted(t) {
		a.Approvers = append(a.Approvers, replaypolicy.Standing{Who: ap.Approver, Now: ap.ApproverNow,
			May: w.stillAllowed(ctx, j, ap.Approver, obj, "approve", &lapses)})
	}
	return r, &stamp, lapses, nil
}

// stillAllowed asks the authority whether who may still do act on obj in
// j's tenant; a failed lookup counts as no. A yes that lapses with time
// (lapsingAuthority) moves lapses to when it does, if sooner.
func (w *Worker) stillAllowed(ctx context.Context, j *job, who quarantine.Actor, obj, act string, lapses *time.Time) bool {
	la, ok := w.auth.(lapsingAuthority)
	if !ok {
		ok, err := w.auth.StillAllowed(ctx, who, j.tenant, obj, act)
		return err == nil && ok
	}
	may, until, err := la.StillAllowedUntil(ctx, who, j.tenant, obj, act)
	if err != nil || !may {
		return false
	}
	if !until.IsZero() && (lapses.IsZero() || until.Before(*lapses)) {
		*lapses = until
	}
	return true
}

// approvalClock is when the approval a claim judged a request under stops
// holding (replaypolicy.ApprovalLapse; zero: nothing bounds it, the
// request having started), and the time the claim judged it at
// (claimClock.judged: the later of the console's clock and the database's)
// as read at read on this process's monotonic clock; settingWaitOver: at
// that time a job of the request waits no longer for a worker with a
// setting the claiming one lacks (replaypolicy.SettingWaitEnds), judged
// once per request.
type approvalClock struct {
	lapse, at, read time.Time
	settingWaitOver bool
}

// now is the clock the claim judged the approval on, moved on by this
// process's monotonic clock since, or the console's clock when that is
// later (judgedAt's rule, without a round trip to the database).
func (c approvalClock) now(console time.Time) time.Time {
	return later(console, c.at.Add(time.Since(c.read)))
}

// approvalHolds says why j may no longer be published on the approval its
// claim judged it under, "" when it may: the table the worker judges by is
// no longer the version the request was approved under, or the approval's
// expiry passed since the claim judged it while nothing of the request
// was published (started: this claim published a job of it, from when on
// the expiry no longer counts, as JudgeRun says). The claim's verdict may
// be two thirds of a lease old at the publish gate; this compares in Go,
// on the claim's clock, what JudgeRun compared then. The job goes back to
// the next claim, which judges the request again with everything the
// database knows (another worker may have started it meanwhile) and
// blocks it as expired when nothing did.
func (w *Worker) approvalHolds(j *job, started bool) string {
	switch {
	case w.svc.cfg.Policy().Stale(j.policy):
		return releasedPolicy
	case !started && replaypolicy.Lapsed(j.approval.lapse, j.approval.now(w.svc.cfg.Now())):
		return releasedExpired
	}
	return ""
}

// rightsLapsed says whether a yes j's claim was judged on has lapsed with
// time since (j.rightsLapse on the authority's clock), so that j must not
// be published on it: the next claim asks again.
func (w *Worker) rightsLapsed(j *job) bool {
	la, ok := w.auth.(lapsingAuthority)
	return ok && !j.rightsLapse.IsZero() && !la.Clock().Before(j.rightsLapse)
}

// ledgerFor is what the replay ledger says of j's identities (Identities:
// each class of its union that keys one), as read (readLedgers), unless
// another job of the claim holds one of them (holdIdentities): j then
// waits for the next claim, when the ledger will tell.
func ledgerFor(j *job, held map[string]int64, read map[int64]*replaypolicy.Ledger) *replaypolicy.Ledger {
	keys := replaypolicy.Identities(j.class, j.union, j.tenant, j.subject, j.msgID, j.opID)
	for _, k := range keys {
		if h, ok := held[k]; ok && h != j.id {
			return &replaypolicy.Ledger{HeldEarlier: true}
		}
	}
	for _, k := range keys {
		held[k] = j.id
	}
	return read[j.id]
}

// holdIdentities gives the identities of keyed (the jobs of a claim the
// ledger is asked about, in claim order) to the jobs whose own publish may
// have landed (attempted), all of a job's or none, first come first: such
// a job is its own retry, and one not yet attempted that came first in the
// claim would make it wait while it waits for it (the ledger's in-flight
// rule), claim after claim. The rest are given out as ledgerFor meets
// them.
func holdIdentities(keyed []*job) map[string]int64 {
	held := map[string]int64{}
	for _, j := range keyed {
		if j.firstAttemptAt == nil {
			continue
		}
		keys := replaypolicy.Identities(j.class, j.union, j.tenant, j.subject, j.msgID, j.opID)
		if slices.ContainsFunc(keys, func(k string) bool { _, ok := held[k]; return ok }) {
			continue // an earlier one goes first: this one waits, as ledgerFor says
		}
		for _, k := range keys {
			held[k] = j.id
		}
	}
	return held
}

// readLedgers reads what the ledger says of the identities of jobs
// (ledgerOf, one statement on q: a worker's transaction, without JIT, which
// compiled this statement for seconds; before it, the origins of the jobs'
// dead letters when one names any, readOrigins), by job; a job the read
// failed for gets the failure (Ledger.Unreadable).
func (w *Worker) readLedgers(ctx context.Context, q querier, jobs []*job) map[int64]*replaypolicy.Ledger {
	out := make(map[int64]*replaypolicy.Ledger, len(jobs))
	if len(jobs) == 0 {
		return out
	}
	n := len(jobs)
	ids, tenants, subjects, msgIDs, opIDs := make([]int64, n), make([]string, n), make([]string, n), make([]*string, n), make([]*string, n)
	for i, j := range jobs {
		ids[i], tenants[i], subjects[i] = j.id, j.tenant, j.subject
		if (replaypolicy.Classing{Class: j.class, Union: j.union}).OncePerIdentity() { // NULL where the identities do not count
			msgIDs[i] = &j.msgID
			if j.opID != "" {
				opIDs[i] = &j.opID
			}
		}
	}
	err := func() error {
		chains, err := readOrigins(ctx, q, jobs)
		if err != nil {
			return err
		}
		rows, err := q.Query(ctx, ledgerOf, ids, tenants, msgIDs, opIDs, chains.jobIDs, chains.originJobs, subjects)
		if err != nil {
			return err
		}
		var id, byMsg, byOp int64
		var l replaypolicy.Ledger
		_, err = pgx.ForEachRow(rows, []any{&id, &byMsg, &byOp, &l.Unsettled, &l.InFlight}, func() error {
			read := l
			read.ReplayedBy, read.AppliedOnly = replayedBy(byMsg, byOp)
			read.Replayed = read.ReplayedBy != 0
			read.ChainCut, read.ChainTwice = chains.cut[id], chains.twice[id]
			out[id] = &read
			return nil
		})
		return err
	}()
	if err != nil {
		return unreadLedgers(jobs, err)
	}
	for _, j := range jobs {
		if out[j.id] == nil {
			out[j.id] = &replaypolicy.Ledger{Unreadable: "the ledger read returned nothing for it"}
		}
	}
	return out
}

// unreadLedgers says, for each of jobs, that the ledger could not be read
// (err).
func unreadLedgers(jobs []*job, err error) map[int64]*replaypolicy.Ledger {
	out := make(map[int64]*replaypolicy.Ledger, len(jobs))
	for _, j := range jobs {
		out[j.id] = &replaypolicy.Ledger{Unreadable: err.Error()}
	}
	return out
}

// releasedBy says why a job is released when ctx, a claim's (bounded by
// the part of its lease it publishes in) under the worker's, ended.
func releasedBy(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return releasedLease
	}
	return releasedStopping
}

// revalidate asks the owning service whether j's original principal may
// still have its effect.
func (w *Worker) revalidate(ctx context.Context, j *job) *replaypolicy.Revalidation {
	if w.reval == nil {
		// The console that took the request has one (else its items are
		// refused at the draft, CheckNoRevalidator): this worker was
		// started without it.
		return &replaypolicy.Revalidation{NotAsked: true}
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
