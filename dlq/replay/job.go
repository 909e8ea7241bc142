package replay

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// JobState is where a replay job stands (replay_jobs.state): while it
// runs, and then its item's outcome.
type JobState string

// Job states. A job waits (pending), is held by a worker (claimed), waits
// for the target stream's duplicate window (deferred, until its
// not_before), or is retried under the same message id after a publish got
// no answer (unknown). It ends as its item's outcome: replayed (the broker
// stored our publish), suppressed_duplicate (the broker kept dropping it
// as a duplicate of a message not ours), skipped, blocked (why: the
// result), needs_reconciliation (nobody can know whether it landed: a
// person decides) or cancelled.
const (
	JobPending             JobState = "pending"
	JobClaimed             JobState = "claimed"
	JobDeferred            JobState = "deferred"
	JobUnknown             JobState = "unknown"
	JobReplayed            JobState = "replayed"
	JobSuppressed          JobState = "suppressed_duplicate"
	JobSkipped             JobState = "skipped"
	JobBlocked             JobState = "blocked"
	JobNeedsReconciliation JobState = "needs_reconciliation"
	JobCancelled           JobState = "cancelled"
)

// OutcomeNotApplied is no state a job is stored in: it names, on the pages
// and in the counts, a job cancelled because a person settled it "not
// applied, leave it" (Reconcile), apart from one cancelled before it ran.
// Its dead letter is back in quarantine and needs someone to act.
const OutcomeNotApplied = "not_applied"

// notAppliedLead begins the result Reconcile stores when a person found
// that the effect did not happen ("not applied, as … found"); a job
// cancelled with it was settled "not applied, leave it".
const notAppliedLead = "not applied, as "

// settledNotApplied is true for a cancelled replay_jobs row j that a person
// settled "not applied, leave it" (ShownOutcome's rule, in SQL).
const settledNotApplied = `starts_with(j.result, '` + notAppliedLead + `')`

// OutcomeApplied is no state a job is stored in either: it names a
// replayed job a person settled "applied" after checking the target
// (Reconcile). Its dead letter is replayed and the ledger holds it, but
// the pages never call it replayed: that means the broker stored this
// replay's publish, and nobody knows that of it (DESIGN.md, invariant 13).
const OutcomeApplied = "applied"

// appliedLead begins the result Reconcile stores when a person found that
// the effect happened ("applied, as … found").
const appliedLead = "applied, as "

// settledApplied is true for a replayed replay_jobs row j that a person
// settled "applied" (ShownOutcome's rule, in SQL).
const settledApplied = `starts_with(j.result, '` + appliedLead + `')`

// ShownOutcome is the outcome of a job in state s with result as the
// pages name it: its state, OutcomeNotApplied for a job a person settled
// "not applied, leave it", or OutcomeApplied for one they settled
// "applied".
func ShownOutcome(s JobState, result string) string {
	switch {
	case s == JobCancelled && strings.HasPrefix(result, notAppliedLead):
		return OutcomeNotApplied
	case s == JobReplayed && strings.HasPrefix(result, appliedLead):
		return OutcomeApplied
	}
	return string(s)
}

// Running reports whether a job in state s is still to be decided.
func (s JobState) Running() bool {
	return s == JobPending || s == JobClaimed || s == JobDeferred || s == JobUnknown
}

// jobStateFor is the state a job gets from a rule's outcome (Go leaves it
// to the publish).
func jobStateFor(o replaypolicy.Outcome) JobState {
	switch o {
	case replaypolicy.Go:
		return ""
	case replaypolicy.Done:
		return JobSkipped
	case replaypolicy.Cancel:
		return JobCancelled
	case replaypolicy.Wait:
		return JobPending
	case replaypolicy.Retry:
		return JobUnknown
	case replaypolicy.Defer:
		return JobDeferred
	case replaypolicy.Reconcile:
		return JobNeedsReconciliation
	case replaypolicy.Replayed:
		return JobReplayed
	case replaypolicy.Suppressed:
		return JobSuppressed
	}
	return JobBlocked // Block, and Fail: the target cannot take it
}

// job is one claimed job with what publishing it needs and, once decided,
// its outcome.
type job struct {
	id, fence, requestID, deadLetterID int64
	tenant                             string
	class                              replaypolicy.Class
	union                              []replaypolicy.Class // every class the item is classed by at execution (judge)
	requestUnion                       []replaypolicy.Class // every class the request's items were classed by at submit
	reqStatus                          Status
	policy                             string
	rate                               float64
	approvedAt                         *time.Time
	policyReplaced                     bool // its request's version was made active again since its approval (replaypolicy.Run.PolicyReplaced)
	requester                          quarantine.Actor
	msgID, opID, corrID, subject       string
	headers                            []dlq.HeaderValue
	flags                              []string // the dead letter's (sendFacts reads not_utf8:<field>)
	serviceTwin                        int64    // the service's own dead letter of an advisory's failure (dlq.ServiceTwinOfD; 0: none)
	conflicting                        []byte   // its identity headers whose values its flags name as conflicting (dlq.ConflictingHeadersOfD)
	payload                            []byte
	principal, itemType                string
	note                               string // the request's reconciliation note
	// stamp is what the rights of the request's people rested on when
	// this claim judged them (authorityStamp); nil when it checked none.
	stamp *string
	// rightsLapse is when a yes of those rights lapses with time, on the
	// authority's clock (zero: none does; Worker.rightsLapsed).
	rightsLapse time.Time
	// approval is when the approval the claim judged the request under
	// stops holding, and the clock it was judged on (Worker.approvalHolds).
	approval approvalClock

	// What the rules judge of the item at execution: the dead letter as it
	// is (status, and which request holds it), whether the payload was
	// edited, the hash the intent holds and the one taken at ingest, its
	// error class, age, generation and latest fix.
	status                           dlq.Status
	heldBy                           int64
	heldByStatus                     string
	edited                           bool
	msgIDDerived, payloadUnavailable bool
	approvedSHA256, originalSHA256   []byte
	errorClass                       string
	deadLetteredAt                   time.Time
	receivedAt                       time.Time // when the console stored it (dlq.DeadLetteredBy)
	firstFailedAt                    *time.Time
	fixFacts
	generation int
	// requesterNow, knownAs and others are, once the request is judged
	// (JudgeRun), its requester as the directory has them now, the
	// addresses the console has seen its people with (Run.KnownAs) and how
	// many people other than the requester approved it
	// (replaypolicy.OthersApproved; -1: not known, the worker checking no
	// people).
	requesterNow quarantine.Actor
	knownAs      []quarantine.Actor
	others       int
	// replayOf is the dead letter's origin (Dlq-Replay-Of, as ingest
	// linked it; nil: none): the ledger's replays of its chain do not
	// count against it (ledger.go).
	replayOf *int64

	// The job as it was claimed: the state it was in and why
	// (prevResult), how often it was claimed (this claim too), deferred,
	// and when it was first about to be published (nil: never);
	// publishBy is when this claim stops publishing (database time: two
	// thirds into the lease).
	prevState  JobState
	prevResult string
	// released: the record found j sent back to wait unsent, with
	// nothing of it to audit (recordIn); judged once, at the record's
	// first attempt (releaseJudged), since that attempt already moved a
	// pending job that may have landed to unknown, and a retry would
	// take the move for news.
	released, releaseJudged bool
	// itemHandedAt is, of another request's job of j's dead letter, and
	// earlierHandedAt, of another dead letter of the same message id and
	// subject (two consumers gave up on one message; the rules wait for
	// one handed before j's dead letter was stored, which j may have come
	// back from), that was handed to NATS, its publish not shown to have missed (handed_at
	// stays set; settling it "not applied" does not clear it), the later of
	// when it was first handed and when it last changed: handed_at is
	// never moved, and a republish or a retry of that job may have handed
	// it again long after; its last change (a record, a settle) is no
	// earlier than its last publish. nil: none. A Duplicate answer inside
	// the window after it may be that replay's message, readable or not
	// (replaypolicy.Ack.EarlierItemReplayAt, EarlierReplayAt); it errs
	// toward a person.
	itemHandedAt, earlierHandedAt *time.Time
	// originRequest is the request of the first replay of j's origin
	// (firstReplayJob of replay_of: the replay j came back from); nil when
	// j names none, or none was sent. A Duplicate answered for that
	// replay's message is waited out (Kept.FromOrigin), as one stored
	// before j's dead letter was.
	originRequest *int64
	// keptSHA256 is the SHA-256 of the payload j carried, taken when a
	// kept outcome let the payload go (keep): its audit row names it.
	keptSHA256     []byte
	attempts       int
	deferrals      int
	deferredBy     string // the message not ours that deferred it last (replaypolicy.KeptKey; "": none recorded)
	firstAttemptAt *time.Time
	firstSentTo    replaypolicy.SentTo // the stream the first attempt was sent to (zero: not known)
	publishBy      time.Time
	window         replaypolicy.Window
	// firstAttempt: the gate marked it attempted now, and no earlier
	// attempt can have landed. firstPublishedAt: when it was first about
	// to be published ever, as the gate read it (never reset); zero when
	// this claim publishes it for the first time ever.
	firstAttempt     bool
	firstPublishedAt time.Time
	// reservedFirst: a gate of this claim set the job's first_published_at
	// (none was set before: firstPublishedAt is zero); the record undoes it
	// when the claim never handed the job to NATS (unreserved).
	reservedFirst bool
	// dbNow is the database's clock now, as the gate that marked the job
	// attempted in this claim read it (gate.now); nil until one did. The
	// broker's answer is judged on it (Worker.ackJudgedAt).
	dbNow func() time.Time
	// handed: this claim handed the job's message to the NATS client
	// (set before the call, so a panic in it counts as handed).
	// handedBefore: an earlier claim may have, and that publish may have
	// landed (handed_at was set when this one claimed it).
	handed       bool
	handedBefore bool
	// waitedFor is the check of a setting a worker lacked that the job
	// waited for (replay_jobs.waited_for; "": none): Job.WaitedFor.
	waitedFor string

	// outcome: the state and why; the PubAck's stream, sequence and
	// whether it said Duplicate (of our own earlier publish); for deferred
	// and unknown jobs when to try again; resetAttempt when the attempt did
	// not land (the broker kept a message not ours); deferred when the
	// broker kept a message not ours (deferredBy then names it), and
	// deferralCounts when that counts toward suppression (not the message
	// that deferred it last: replaypolicy.Ack.CountsDeferral).
	state          JobState
	result         string
	stream         string
	seq            uint64
	duplicate      bool
	notBefore      *time.Time
	resetAttempt   bool
	deferred       bool
	deferralCounts bool
	appliedTwin    bool // skipped as its identity's replay a person found applied (judge)
}

// decide gives j the state and result of a rule's verdict, and when to try
// again for one that waits until a time.
func (j *job) decide(v replaypolicy.Verdict) {
	j.state, j.result = jobStateFor(v.Outcome), v.Reason
	if !v.Until.IsZero() {
		until := v.Until
		j.notBefore = &until
	}
}

// unsent gives j the state and result of a verdict that ends it before
// it is published in this claim, as JudgeUnsent says: one whose earlier
// publish may have landed needs a person, whatever stopped it now.
func (j *job) unsent(v replaypolicy.Verdict) {
	if replaypolicy.WaitsForSetting(v) {
		j.waitedFor = v.Check
	}
	j.decide(replaypolicy.JudgeUnsent(v, replaypolicy.Unsent{State: string(j.prevState), Attempted: j.firstAttemptAt != nil}))
}

// claimJobs takes due jobs under a lease: at most $1 of them, no more
// payload and header bytes than $4 (but always one), so a claim of big
// payloads or big headers stays bounded in memory, and no more of one
// request than its rate publishes in $5 seconds (the part of the lease a
// claim publishes in), so a slow request is not held by a worker that
// cannot publish it. Sizes are the jobs' own (replay_jobs.bytes, written
// at approval), so the claim reads no item and no dead letter: it reads
// replay_jobs_ready_idx in its order, the jobs' rows and their requests.
// It returns each job's new fencing token, the state it was claimed from,
// when the claim stops publishing, and the job as loadJobs and the rules
// need it, with its result (the claim leaves it: why it was in that
// state).
const claimJobs = claimJobsFrom + claimJobsTo

// claimSome is claimJobs of the jobs $6 only: a narrowing's claim
// (narrow.go), which reads those jobs by their key.
const claimSome = claimJobsFrom + `
      AND j.id = ANY($6::bigint[]) -- only the jobs the narrowing claims` + claimJobsTo

// claimJobsFrom and claimJobsTo are claimJobs before and after the end of
// its WHERE clause.
const claimJobsFrom = `
WITH c AS (
    SELECT j.id, j.not_before, j.request_id, j.dead_letter_id, j.dead_lettered_at, j.state, j.bytes FROM replay_jobs j
    WHERE j.not_before <= now()
      AND j.state IN ('pending', 'deferred', 'unknown', 'claimed') -- replay_jobs_ready_idx, read in its order
      AND (j.state <> 'claimed' OR j.lease_until < now()) -- a live lease is someone else's`

const claimJobsTo = `
    ORDER BY j.not_before, j.id
    LIMIT $1
    FOR UPDATE OF j SKIP LOCKED
), sized AS (
    SELECT c.id, c.state, row_number() OVER w AS n, sum(c.bytes) OVER w AS upto,
           row_number() OVER (PARTITION BY c.request_id ORDER BY c.not_before, c.id) AS nth, r.rate
    FROM c
    JOIN replay_requests r ON r.id = c.request_id
    WINDOW w AS (ORDER BY c.not_before, c.id)
)
UPDATE replay_jobs j SET state = 'claimed', lease_owner = $2, lease_until = now() + $3::interval,
    fence = nextval('replay_fence_seq'), attempts = j.attempts + 1, updated_at = now()
FROM sized s WHERE j.id = s.id AND (s.upto <= $4 OR s.n = 1)
  AND s.nth <= ceil(s.rate * $5) + 1 -- what the rate lets this claim publish
RETURNING j.id, j.fence, s.state, now() + $3::interval * 2 / 3,
    j.request_id, j.dead_letter_id, j.dead_lettered_at, j.not_before, j.attempts, j.deferrals, j.first_attempt_at,
    j.first_stream, j.first_stream_created, j.first_stream_window, j.first_stream_next_seq, j.handed_at IS NOT NULL, j.result, coalesce(j.deferred_by, ''), j.waited_for`

// loadJobs reads what publishing the claimed jobs needs ($1 the jobs, $2
// their requests, $3 their dead letters and $4 the dead letters' times, in
// the order they are published), and locks their dead letters until the
// claim commits, so that the status read is the one a concurrent change
// left. The payload is the edited one, else the dead letter's. A dead
// letter that is gone (retention removes none an open request holds; this
// is the job's way to end if one ever were) is status "purged", which the
// rules block.
var loadJobs = `
WITH k AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::timestamptz[]) WITH ORDINALITY AS k(id, request_id, dead_letter_id, at, n)
), d AS (
    SELECT d.id, d.tenant, d.item_type, d.fingerprint, d.payload, d.principal, d.status, d.msg_id_derived, d.payload_unavailable,
           d.payload_sha256, d.error_class, d.first_failed_at, ` + judgedGenerationOfD + ` AS generation, d.flags, d.replay_of, d.received_at,
           ` + dlq.ServiceTwinOfD + ` AS service_twin, ` + dlq.ConflictingHeadersOfD + ` AS conflicting
    FROM k JOIN dead_letters d ON d.id = k.dead_letter_id AND d.dead_lettered_at = k.at
    FOR SHARE OF d
)
SELECT k.id, r.tenant, r.class, r.classes, r.status, r.policy_version, r.rate, r.approved_at, ` + policyReplacedOfR + `,
       r.requester_issuer, r.requester_subject, r.requester_email, r.requester_email_verified, r.reconciliation_note,
       i.msg_id, i.operation_id, i.correlation_id, i.subject, i.headers, coalesce(i.payload, d.payload, ''),
       coalesce(d.principal, ''), coalesce(d.item_type, ''),
       coalesce(d.status, '` + purged + `'), CASE WHEN i.held THEN i.request_id
                      ELSE coalesce((SELECT h.request_id FROM replay_items h WHERE h.dead_letter_id = i.dead_letter_id AND h.held), 0) END,
       coalesce((SELECT hr.status FROM replay_items h JOIN replay_requests hr ON hr.id = h.request_id
                 WHERE h.dead_letter_id = i.dead_letter_id AND h.held), ''),
       i.payload IS NOT NULL, coalesce(d.msg_id_derived, false), coalesce(d.payload_unavailable, true), i.payload_sha256, d.payload_sha256,
       ` + dlq.JudgedErrorClassOfD + `, d.first_failed_at, coalesce(d.generation, 0), ` + fixColumns + `,
       coalesce(d.flags, '{}'), d.replay_of, coalesce(d.received_at, k.at), coalesce(d.service_twin, 0), coalesce(d.conflicting, '[]'),
       (SELECT max(greatest(o.handed_at, o.updated_at)) FROM replay_items oi
        JOIN replay_jobs o ON o.request_id = oi.request_id AND o.dead_letter_id = oi.dead_letter_id
        WHERE oi.dead_letter_id = i.dead_letter_id AND oi.request_id <> i.request_id AND o.handed_at IS NOT NULL),
       (SELECT max(greatest(o.handed_at, o.updated_at)) FROM replay_items oi
        JOIN replay_jobs o ON o.request_id = oi.request_id AND o.dead_letter_id = oi.dead_letter_id
        WHERE quarantine_key(oi.msg_id) = quarantine_key(i.msg_id) AND oi.msg_id = i.msg_id AND oi.subject = i.subject
          AND oi.dead_letter_id <> i.dead_letter_id AND oi.request_id <> i.request_id AND o.handed_at IS NOT NULL
          AND o.id IS DISTINCT FROM fr.job),
       fr.request
FROM k
JOIN replay_requests r ON r.id = k.request_id
CROSS JOIN LATERAL (SELECT * FROM replay_items i WHERE i.request_id = k.request_id AND i.dead_letter_id = k.dead_letter_id LIMIT 1) i
LEFT JOIN d ON d.id = k.dead_letter_id
LEFT JOIN LATERAL (SELECT rj0.id AS job, rj0.request_id AS request FROM replay_jobs rj0
                   WHERE rj0.id = ` + firstReplayJob("d.replay_of") + `) fr ON true -- the replay the dead letter came back from
` + fixJoin + `
ORDER BY k.n`

// claim takes up to Batch due jobs (fewer when recording was slow:
// recordPace.claimLimit) and up to BatchBytes of payload and headers under
// a lease and a new fencing token each, and loads them with their dead
// letters, in one transaction. While the worker narrows down a panic
// (narrow.go) it claims only the jobs of the narrowing's next group.
//
// A panic while the claimed jobs are loaded (a bug met on some job's
// data) commits the claim all the same, and is panicked again once it
// is: its jobs are then held under their fences (w.claimed), so that
// runOnceGuarded can blame the panic on the claim's only job, or narrow
// it down, as it does for a panic met later in the claim. Rolled back,
// the jobs would be claimed again at once, and the panic met again, with
// no job ever to blame.
func (w *Worker) claim(ctx context.Context) ([]*job, error) {
	var out, held []*job
	var loadPanic *workerPanic
	budget := (w.cfg.Lease * 2 / 3).Seconds()
	group := w.narrow.next()
	err := pgx.BeginTxFunc(ctx, w.svc.pool, claimTx, func(tx pgx.Tx) (err error) {
		limit := w.pace.claimLimit(w.cfg)
		var rows pgx.Rows
		if group != nil {
			rows, err = tx.Query(ctx, claimSome, limit, w.cfg.Owner, w.cfg.Lease.String(), w.cfg.BatchBytes, budget, group)
		} else {
			rows, err = tx.Query(ctx, claimJobs, limit, w.cfg.Owner, w.cfg.Lease.String(), w.cfg.BatchBytes, budget)
		}
		if err != nil {
			return fmt.Errorf("claim replay jobs: %w", err)
		}
		var claimed []*job
		var c job
		var notBefore time.Time
		var sentStream *string
		var sentCreated *time.Time
		var sentWindow *time.Duration
		var sentNextSeq *int64
		if _, err := pgx.ForEachRow(rows, []any{&c.id, &c.fence, &c.prevState, &c.publishBy, &c.requestID, &c.deadLetterID, &c.deadLetteredAt,
			&notBefore, &c.attempts, &c.deferrals, &c.firstAttemptAt, &sentStream, &sentCreated, &sentWindow, &sentNextSeq, &c.handedBefore, &c.prevResult, &c.deferredBy, &c.waitedFor}, func() error {
			j := c
			if sentStream != nil && sentCreated != nil {
				j.firstSentTo = replaypolicy.SentTo{Stream: *sentStream, Created: *sentCreated}
				if sentWindow != nil {
					j.firstSentTo.Duplicates = *sentWindow
				}
				if sentNextSeq != nil && *sentNextSeq > 0 {
					j.firstSentTo.NextSeq = uint64(*sentNextSeq)
				}
			}
			j.notBefore = &notBefore // the order of publishing; the record sets its own
			claimed = append(claimed, &j)
			return nil
		}); err != nil {
			return fmt.Errorf("claim replay jobs: %w", err)
		}
		if len(claimed) == 0 {
			return nil
		}
		held = claimed
		defer func() {
			if v := recover(); v != nil {
				loadPanic, out, err = asWorkerPanic(v), nil, nil // committed: see above
			}
		}()
		slices.SortFunc(claimed, func(a, b *job) int {
			return cmp.Or(a.notBefore.Compare(*b.notBefore), cmp.Compare(a.id, b.id))
		})
		n := len(claimed)
		ids, requests, deadLetters, ats := make([]int64, n), make([]int64, n), make([]int64, n), make([]time.Time, n)
		for i, j := range claimed {
			ids[i], requests[i], deadLetters[i], ats[i] = j.id, j.requestID, j.deadLetterID, j.deadLetteredAt
			j.notBefore = nil
		}
		rows, err = tx.Query(ctx, loadJobs, ids, requests, deadLetters, ats)
		if err != nil {
			return fmt.Errorf("load replay jobs: %w", err)
		}
		defer rows.Close()
		byID := make(map[int64]*job, n)
		for _, j := range claimed {
			byID[j.id] = j
		}
		for rows.Next() {
			var id int64
			var hs []byte
			var l job
			dest := []any{&id, &l.tenant, &l.class, &l.requestUnion, &l.reqStatus, &l.policy, &l.rate, &l.approvedAt, &l.policyReplaced,
				&l.requester.Issuer, &l.requester.Subject, &l.requester.Email, &l.requester.EmailVerified, &l.note, &l.msgID, &l.opID, &l.corrID, &l.subject,
				&hs, &l.payload, &l.principal, &l.itemType, &l.status, &l.heldBy, &l.heldByStatus, &l.edited, &l.msgIDDerived, &l.payloadUnavailable,
				&l.approvedSHA256, &l.originalSHA256, &l.errorClass, &l.firstFailedAt, &l.generation}
			dest = append(append(dest, l.fixInto()...), &l.flags, &l.replayOf, &l.receivedAt, &l.serviceTwin, &l.conflicting, &l.itemHandedAt, &l.earlierHandedAt, &l.originRequest)
			if err := rows.Scan(dest...); err != nil {
				return fmt.Errorf("load replay jobs: %w", err)
			}
			j := byID[id]
			l.id, l.fence, l.requestID, l.deadLetterID, l.deadLetteredAt = j.id, j.fence, j.requestID, j.deadLetterID, j.deadLetteredAt
			l.prevState, l.publishBy, l.attempts, l.deferrals, l.firstAttemptAt = j.prevState, j.publishBy, j.attempts, j.deferrals, j.firstAttemptAt
			l.firstSentTo, l.handedBefore, l.prevResult, l.deferredBy, l.waitedFor = j.firstSentTo, j.handedBefore, j.prevResult, j.deferredBy, j.waitedFor
			if err := json.Unmarshal(hs, &l.headers); err != nil {
				l.state, l.result = JobBlocked, "stored headers unreadable: "+err.Error()
			}
			*j = l
			out = append(out, j)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if w.loaded != nil {
			w.loaded(ids)
		}
		return nil
	})
	if group != nil && err == nil {
		w.narrow.claimed = true
	}
	if loadPanic != nil {
		if err == nil {
			w.claimed = held
		}
		panic(loadPanic)
	}
	return out, err
}

// item is the item of j as the rules judge it at execution; the subject and
// the revalidation service are the job's rules (JudgeJob,
// JudgeRevalidation: a worker's own settings), not the item's.
func (j *job) item(cfg Config) replaypolicy.Item {
	sum := sha256.Sum256(j.payload)
	it := replaypolicy.Item{
		Tenant: j.tenant, ItemType: j.itemType, MsgID: j.msgID, MsgIDDerived: j.msgIDDerived, OperationID: j.opID, Principal: j.principal,
		OriginalSubject: j.subject, PayloadSHA256: hex.EncodeToString(sum[:]), OriginalPayloadSHA256: hex.EncodeToString(j.originalSHA256),
		PayloadEdited: j.edited, PayloadUnavailable: j.payloadUnavailable, Status: string(j.status), Request: j.requestID, HeldBy: j.heldBy, HeldByStatus: j.heldByStatus,
		ApprovedSHA256: hex.EncodeToString(j.approvedSHA256), ErrorClass: j.errorClass, DeadLetteredAt: j.deadLetteredBy(),
		Generation: j.generation, ReconciliationNote: j.note,
		Send:      sendFacts(j.headers, j.flags, j.subject, int64(len(j.payload)), cfg.MaxPayload, j.sentAs(), j.msgID, j.opID, j.corrID),
		Requester: j.requester, RequesterNow: j.requesterNow, KnownAs: j.knownAs, OthersApproved: j.others, ServiceTwin: j.serviceTwin,
		Conflicting: conflictingOf(j.flags, j.conflicting),
	}
	j.setFix(&it)
	return it
}

// sentAs is what j's replay carries of its own beside its ids. Its
// stream is its window's, read after the item's rules judged it
// (Worker.judge): until then it is counted at the longest name.
func (j *job) sentAs() sentAs {
	return sentAs{deadLetterID: j.deadLetterID, requestID: j.requestID, edited: j.edited, stream: j.window.Stream, derivedMsgID: j.msgIDDerived}
}

// deadLetteredBy is when j's dead letter was stored (dlq.DeadLetteredBy).
func (j *job) deadLetteredBy() time.Time {
	return dlq.DeadLetteredBy(j.deadLetteredAt, j.receivedAt, j.flags)
}

// attempt is what the window rule judges of j: when its original was
// stored at the latest (the earlier of its first failure, when plausible,
// and the moment the dead letter was stored), when the dead letter was
// stored (a copy's window counts from it), and its first attempt.
func (j *job) attempt(margin time.Duration) replaypolicy.Attempt {
	at := j.deadLetteredBy()
	a := replaypolicy.Attempt{MsgID: j.msgID, StoredBy: storedBy(at, j.firstFailedAt), DeadLetteredAt: at, Window: j.window, Margin: margin}
	if j.firstAttemptAt != nil {
		a.FirstAttemptAt, a.FirstSentTo = *j.firstAttemptAt, j.firstSentTo
	}
	return a
}
