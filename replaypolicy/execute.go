package replaypolicy

import (
	"fmt"
	"time"

	"github.com/quarantine-console/quarantine"
)

// Run is what a replay worker knows about a request whose jobs it claimed,
// just before it publishes them: anything may have changed since approval.
type Run struct {
	Tenant string
	Class  Class
	// Status is the request's status ("approved", "running", "cancelled",
	// ...), PolicyVersion the table version it was approved under, and
	// ApprovedAt when it was approved (zero: never).
	Status        string
	PolicyVersion string
	ApprovedAt    time.Time
	// PolicyReplaced: the version it was approved under was replaced
	// since, and then made active again (a rollback). The change voided
	// the approval, and going back does not revive it: the approver said
	// yes to those rules before the operators found them wrong.
	PolicyReplaced bool
	// Started: a publish of a job of the request may have landed, though
	// its status does not say so yet (a worker marked the job attempted
	// and stopped before it recorded anything). A request is started once
	// it is running or this is true; a claim that published nothing does
	// not start it.
	Started bool
	// StartUnsettled: no publish of it may have landed yet, but a worker
	// that still holds a job of it (its lease runs) marked that job
	// attempted and has not recorded whether it sent it. That worker sends
	// it only while the approval holds, so whether the request started
	// before its approval expired is not known until it records or its
	// lease runs out: past the expiry its other jobs wait for that.
	StartUnsettled bool
	// Deferred: a worker judged a job of it while its approval held and
	// chose to wait for the target stream's duplicate window (the job was
	// deferred: JudgeWindow before a first publish, or JudgeAck after the
	// broker dropped one as a duplicate of a message that is not ours). The
	// console itself chose that wait, so the request counts as started for
	// its approval's lapse (ApprovalLapse): the approval was used in time,
	// and the wait is not the approver's to renew.
	Deferred bool
	// Union is every class the request's items were classed by when it was
	// submitted (Request.Union): its approval expires by the strictest.
	Union     []Class
	Requester quarantine.Actor
	// IntentHash is the request's intent hash, RequestedAt when it was
	// submitted, and Approvals its approvals as recorded (void ones too):
	// the ones that counted when it was approved (Counted) are what its
	// approval rests on.
	IntentHash  string
	RequestedAt time.Time
	Approvals   []Approval
	// KnownAs is each identity of the request's people with each address
	// the console has seen it with (Request.KnownAs): the requester and
	// each approver are the person behind all of them.
	KnownAs []quarantine.Actor
	// ApprovalsNeeded is how many distinct approvers the request needed
	// when it was approved (0: none).
	ApprovalsNeeded int
	// Authority is what people may do now; nil when the worker checks no
	// authority.
	Authority *Authority
}

// Authority is the current rights of the people of a request.
type Authority struct {
	// Unreadable says why they could not be read ("" when they were).
	Unreadable string
	// RequesterMay: the requester still may request replays of the class
	// in the tenant.
	RequesterMay bool
	// Approvers are the approvers of the request's approvals that counted
	// when it was approved (Run.Counted; no other approval is asked about
	// or counted), each with whether they still may approve replays of the
	// class in the tenant.
	Approvers []Standing
	// RequesterNow is the requester's identity as the directory has it
	// now (zero: not known).
	RequesterNow quarantine.Actor
}

// Standing is one person, as the request recorded them (Who) and as the
// directory has their identity now (Now; zero: not known), and whether
// they still hold a right.
type Standing struct {
	Who quarantine.Actor
	Now quarantine.Actor
	May bool
}

// Counted are the approvals of r that counted when it was approved
// (CountedAtApproval): the approvals a worker asks the rights of, and
// counts the people of (Authority.Approvers), and whose first bounds when
// r may start (ApprovalLapse).
func (r Run) Counted(t *Table) []Approval {
	return CountedAtApproval(t, r.request(), r.ApprovedAt)
}

// request is r as the approval rules judge its approvals.
func (r Run) request() Request {
	return Request{Class: r.Class, Union: r.Union, Requester: r.Requester, IntentHash: r.IntentHash, RequestedAt: r.RequestedAt,
		Approvals: r.Approvals, KnownAs: r.KnownAs}
}

// JudgeRun says whether the jobs of a request may be published now, under
// table t at time now. It is pure. In order: a cancelled request cancels
// them; a request neither approved nor running blocks them; so do a table
// other than the one it was approved under, an approval it rests on older
// than the approval_expiry of its class (the strictest of its Union:
// ApprovalLapse, from the first approval that counted) when the request
// has not started, that is while nothing of it may have been
// published and the console did not defer it for the target's duplicate
// window (neither running, Started nor Deferred: an approval is for now, not
// for whenever workers or the broker come back; when another worker's
// publish may yet have started it before the expiry, StartUnsettled, the
// jobs wait for its record), a requester or an approver who lost the
// right (of the approvals that counted when it was approved: Counted), and
// approvals that no longer come from ApprovalsNeeded people
// other than the requester, the people as the directory has them now
// (MayBeOne: an email changed since to one another of the request's people
// holds). Rights that could not be read make the jobs wait for a later
// claim: nothing is published on a failed read.
func JudgeRun(t *Table, r Run, now time.Time) Verdict {
	v := Verdict{Class: r.Class, Rule: -1, Outcome: Go}
	switch r.Status {
	case "approved", "running":
	case "cancelled":
		return v.plain(Cancel, CheckCancelled, "the request was cancelled")
	default:
		return v.plain(Block, CheckRequestStatus, "the request is "+r.Status)
	}
	if t.Stale(r.PolicyVersion) || r.PolicyReplaced {
		return v.plain(Block, CheckPolicy, "the replay policy changed since approval; request again")
	}
	if Lapsed(ApprovalLapse(t, r), now) {
		k, _ := t.RequestKnobs(r.Class, r.Union)
		if r.StartUnsettled {
			return v.plain(Wait, CheckStartUnsettled, fmt.Sprintf("the approval's expiry (%s) has passed, and whether the replay started before it "+
				"is not known yet: a worker holds a job of it and has not recorded whether it sent it; will retry", k.ApprovalExpiry))
		}
		return v.plain(Block, CheckExpired, fmt.Sprintf("the approval expired (%s) before the replay started; request again", k.ApprovalExpiry))
	}
	a := r.Authority
	switch {
	case a == nil:
		return v
	case a.Unreadable != "":
		return v.plain(Wait, CheckAuthorityUnread, "could not read who may still replay: "+a.Unreadable+"; will retry")
	case !a.RequesterMay:
		return v.plain(Block, CheckRequesterRights, fmt.Sprintf("the requester %s no longer may request %s replays in %s", r.Requester.Attribution(), r.Class, r.Tenant))
	}
	for _, s := range a.Approvers {
		if !s.May {
			return v.plain(Block, CheckApproverRights, fmt.Sprintf("the approver %s no longer may approve %s replays in %s", s.Who.Attribution(), r.Class, r.Tenant))
		}
	}
	return judgeRunPeople(v, r)
}

// OthersApproved is how many distinct people other than the requester
// approved r (its approvals that are not void), the people as the request
// recorded them, as the directory has them now and under every address
// the console has seen their identity with (Run.KnownAs); -1 when not
// known (the worker checks no people, or could not read them). An item
// whose fix the requester recorded needs one (FixedByRequester).
func OthersApproved(r Run) int {
	if r.Authority == nil || r.Authority.Unreadable != "" {
		return -1
	}
	counted, _ := othersApproved(r)
	return len(counted)
}

// othersApproved are the distinct people other than the requester who
// approved r (Authority.Approvers), and the first approver who may be the
// requester ("": none), by Attribution.
func othersApproved(r Run) (counted []person, own string) {
	a := r.Authority
	for _, s := range a.Approvers {
		p := personOf(r.KnownAs, s.Who, s.Now)
		switch {
		case p.mayBe(personOf(r.KnownAs, r.Requester, a.RequesterNow)):
			if own == "" {
				own = s.Who.Attribution()
			}
		case !containsPerson(counted, p):
			counted = append(counted, p)
		}
	}
	return counted, own
}

// judgeRunPeople blocks r when its approvals, judged with the people as
// the directory has them now, no longer come from r.ApprovalsNeeded
// distinct people other than the requester (separation of duties at
// execution, as judgeApprovals counts at approval). Its reason says why:
// an approver who may be the requester, approvers who may be one person,
// or, when the people as the request recorded them are short too, no
// email changed anything: it was approved without an approval it needed,
// which only a fix marker its requester recorded (FixedByRequester: one
// approver who is not them) asks beyond the approvals its approval
// weighed.
func judgeRunPeople(v Verdict, r Run) Verdict {
	counted, own := othersApproved(r)
	switch {
	case len(counted) >= r.ApprovalsNeeded:
		return v
	case own != "":
		return v.plain(Block, CheckOwnRequest, fmt.Sprintf("the approver %s may be the requester %s: their accounts share an email (now, or as one of them had it before); request again",
			own, r.Requester.Attribution()))
	case len(recordedApprovers(r)) < r.ApprovalsNeeded:
		return v.plain(Block, CheckOwnRequest, fmt.Sprintf("the request was approved by %d people other than the requester, and it needs %d: "+
			"a fix marker its requester %s recorded (under this account or another of theirs) lets its items replay only with an approver who is not them; "+
			"request again", len(counted), r.ApprovalsNeeded, r.Requester.Attribution()))
	}
	return v.plain(Block, CheckOwnRequest, fmt.Sprintf("the approvals come from %d people now, not %d: two approvers' accounts share an email "+
		"(now, or as one of them had it before); request again", len(counted), r.ApprovalsNeeded))
}

// recordedApprovers are the distinct people other than the requester who
// approved r, as its approvals recorded them (othersApproved without the
// directory's word and without the addresses the console saw them with
// before, KnownAs): fewer than r needs, and no email change explains
// the shortfall.
func recordedApprovers(r Run) []person {
	a := *r.Authority
	a.RequesterNow, a.Approvers = quarantine.Actor{}, make([]Standing, len(r.Authority.Approvers))
	for i, s := range r.Authority.Approvers {
		a.Approvers[i] = Standing{Who: s.Who, May: s.May}
	}
	r.Authority, r.KnownAs = &a, nil
	counted, _ := othersApproved(r)
	return counted
}

// ApprovalLapse is when the approval of r stops letting anything of it be
// published under table t: the approval_expiry of its class (the
// strictest of its Union) after the first approval it counted when it was
// approved (StartBy: each approval lets it start for that long after it
// was given, not after the last one completed it), while the request has
// not started (approved, not Started). It is zero when no expiry bounds it:
// the request started (from then on its items go on however long they
// take, and so does one the console deferred for the target's duplicate
// window: Deferred), was never approved, or its class is not in t (JudgeRun blocks it
// for the table anyway). JudgeRun judges it at a claim; a worker compares
// it again with its clock right before each publish (Lapsed), since the
// claim's verdict may be up to two thirds of a lease old by then.
func ApprovalLapse(t *Table, r Run) time.Time {
	if r.Status != "approved" || r.Started || r.Deferred {
		return time.Time{}
	}
	return StartBy(t, r.request(), r.ApprovedAt) // zero when never approved, or its class is not in t
}

// Lapsed reports whether an approval that lapses at lapse (ApprovalLapse;
// zero: never) no longer holds at now.
func Lapsed(lapse, now time.Time) bool {
	return !lapse.IsZero() && now.After(lapse)
}

// MaxWorkerFailures is how many times a replay worker may fail on one job
// (a panic it recovered while it worked on that job) before the job is
// taken from the workers and given to a person (JudgeWorkerFailures). A
// bug met once may be a race; met three times on the same item's data it
// is that item's, and every further claim would only cost another failure
// and another lease.
const MaxWorkerFailures = 3

// JudgeWorkerFailures says what becomes of a job a replay worker has
// failed on failures times (this failure counted; last is what the last
// failure said, as text). It is pure. Below MaxWorkerFailures the job is
// left to its lease, as a crash leaves it, and claimed again (Go); from
// then on it is blocked, naming the count and the failure, for a person
// (JudgeUnsent makes that needs-reconciliation when a publish of it may
// have landed).
func JudgeWorkerFailures(failures int, last string) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	if failures < MaxWorkerFailures {
		return v
	}
	return v.plain(Block, CheckWorkerFailed, fmt.Sprintf("the worker failed on this item %d times: %s", failures, last))
}

// Job is what a replay worker knows about one job of a request JudgeRun let
// through. Ledger and Revalidation cost a query or a request to another
// service, so they are nil until JudgeJob says it needs them.
type Job struct {
	Class Class
	// Union is every class whose rules the job's item must meet
	// (Classing.Union of its item's verdict at execution); the rules of
	// each apply: the ledger for every class but rebuildable
	// (Classing.OncePerIdentity), revalidation for revalidate.
	Union []Class
	// SubjectRefusal says why the job's subject may not be published to
	// (the worker's subject allowlist's answer), "" when it may. The job
	// waits for a worker whose setting allows it (every step before judged
	// the subject allowed), until SettingWaitOver.
	SubjectRefusal string
	// SettingWaitOver: its approval's expiry passed (SettingWaitEnds), so
	// a job that waits for a worker with a setting this one lacks (its
	// subject list, its revalidation subject) waits no longer: blocked.
	SettingWaitOver bool
	// WaitedFor is the check of a setting a worker lacked that the job
	// waited for in an earlier claim (WaitsForSetting), "" when it never
	// did or a worker that has the setting took it before SettingWaitOver
	// (the wait ended: a later retry, deferral or republish is judged as
	// any job's): once SettingWaitOver, a worker that has the setting
	// blocks it too. Only a worker that lacks it judged the wait's end, and a
	// worker with no replay subjects claims nothing: a setting emptied on
	// every process and given back weeks later let the first worker that
	// had it publish the job on an approval long expired (review round 43).
	WaitedFor string
	// Attempted: a publish of this job may have landed already (it was
	// marked attempted and no answer said it did not land).
	Attempted    bool
	Ledger       *Ledger
	Revalidation *Revalidation
}

// Ledger is what the replay ledger says about a job's identity (Identity).
type Ledger struct {
	// Unreadable says why it could not be read ("" when it was).
	Unreadable string
	// HeldEarlier: another job of this claim with the same identity goes
	// first: one whose own publish may have landed (its retry), else the
	// one ahead in the claim.
	HeldEarlier bool
	// Replayed: another job (of this request or another, of any class)
	// already replayed the identity, by request ReplayedBy, and the job's
	// own Dlq-Replay-Of chain does not explain it (Item.AlreadyReplayed).
	Replayed   bool
	ReplayedBy int64
	// AppliedOnly: every such replay is a person's finding that the effect
	// happened ("applied", after an outcome nobody could know), none one
	// the broker confirmed: the job is done, but nothing says it was
	// replayed.
	AppliedOnly bool
	// ChainCut is the dead letter up the job's Dlq-Replay-Of chain that
	// retention removed (0: none): as Item.ChainCut, a replay the ledger
	// holds is then for a person, never taken as done.
	ChainCut int64
	// ChainTwice is the dead letter up the job's chain the console sent
	// more than one replay of (0: none): as Item.ChainTwice.
	ChainTwice int64
	// Unsettled is the request of another job of the identity that may have
	// been published and waits for a person (needs_reconciliation); 0:
	// none.
	Unsettled int64
	// InFlight is the request of another job of the identity whose publish
	// may have landed and that nothing settled yet (it is retried under its
	// message id, or its worker is publishing it); 0: none.
	InFlight int64
}

// Revalidation is the owning service's answer about a revalidate item's
// original principal.
type Revalidation struct {
	// Unanswered says why there is no answer ("" when there is one).
	Unanswered string
	// NotAsked: this worker cannot ask, it has no revalidation subject
	// (REVALIDATE_SUBJECT). The request was approved by a console that
	// has one, so the job waits for a worker that has it too.
	NotAsked bool
	Allow    bool
	Reason   string
}

// has reports whether the rules of class k apply to the job.
func (j Job) has(k Class) bool {
	return j.classing().Has(k)
}

// classing is the job's class and union as a Classing.
func (j Job) classing() Classing {
	return Classing{Class: j.Class, Union: j.Union}
}

// Identities are what the ledger is asked about, and a publish gate locks,
// for a replay of an item whose classes are class and union: for every
// class but rebuildable (Classing.OncePerIdentity), its message id on its
// subject and, when it has one, its operation id (Identity of dedupe and
// of same_operation); none for rebuildable.
func Identities(class Class, union []Class, tenant, subject, msgID, operationID string) []string {
	if !(Classing{Class: class, Union: union}).OncePerIdentity() {
		return nil
	}
	out := []string{Identity(Dedupe, tenant, subject, msgID, operationID)}
	if operationID != "" {
		out = append(out, Identity(SameOperation, tenant, subject, msgID, operationID))
	}
	return out
}

// Identity is what a replay of class publishes once, as the ledger is
// asked about it and a publish gate locks it: the message id on its
// subject for dedupe, in every tenant (the ledger asks it so:
// replayedByMsg; two tenants may replay to one subject, and with the lock
// the tenant's, two tenants' gates of one message passed together and
// both published, review round 41), the operation id for same_operation,
// within the tenant; "" for the other classes (whose replays the ledger is asked
// about all the same: Identities). A message id is a message's on its
// subject: JetStream scopes Nats-Msg-Id to a stream, so two services of
// a tenant may each use one business key ("order-123") as the id of their
// own messages, and a replay of one is no replay of the other (a message
// has one subject, and its replays go to it). An operation id names the
// effect, wherever its messages go.
func Identity(class Class, tenant, subject, msgID, operationID string) string {
	switch class {
	case Dedupe:
		return "\x00msg\x00" + subject + "\x00" + msgID
	case SameOperation:
		return tenant + "\x00op\x00" + operationID
	}
	return ""
}

// JudgeJob says what becomes of one job. It is pure. In order: a subject
// the worker's allowlist refuses makes it wait for a worker whose list
// allows it, and blocks it once SettingWaitOver; a job that, in an
// earlier claim, waited for a worker with a setting (WaitedFor) is blocked
// once SettingWaitOver, whichever worker judges it; for every class but rebuildable
// (Classing.OncePerIdentity), another
// job of the claim with the same identity makes it wait, the ledger's
// answer (Needs NeedLedger until it is given) skips it (dedupe,
// same_operation) or blocks it (revalidate, manual) when the identity
// was already replayed, blocks it when another job of the
// identity may have landed and waits for a person (possibly replayed),
// makes it wait while another job of the identity may have landed and is
// not settled yet (unless a publish of its own may have landed too: it
// then goes on as its own retry), and
// an unreadable ledger leaves it for a later claim (Wait: nothing was
// sent, so its outcome is not unknown); for
// revalidate, the owning service's answer (Needs NeedRevalidation until
// given: JudgeRevalidation). Otherwise Go: publish.
func JudgeJob(j Job) Verdict {
	v := Verdict{Class: j.Class, Rule: -1, Outcome: Go}
	if j.SubjectRefusal != "" {
		// The subject was judged at every step before with the setting of
		// the console that took it; this worker's is another (a replica
		// or worker rolled without it, or before it): a setting of this
		// process is no finding about the item (review round 42).
		refusal := j.SubjectRefusal + " on this worker, though every step before allowed it: the processes' " + SubjectSetting +
			" differ, or the subject was taken out since"
		if j.SettingWaitOver {
			return v.plain(Block, CheckSubject, refusal+"; no worker whose setting allows it took the job before its approval's expiry: request again")
		}
		return v.plain(Wait, CheckSubject, refusal+"; the job waits for a worker whose setting allows it"+waitsForSetting)
	}
	if j.WaitedFor != "" && j.SettingWaitOver {
		return v.plain(Block, j.WaitedFor, "the job waited for a worker "+workerWith(j.WaitedFor)+
			", and none took it before its approval's expiry: request again")
	}
	if j.classing().OncePerIdentity() {
		l := j.Ledger
		switch {
		case l == nil:
			v.Outcome, v.Needs = Wait, NeedLedger
			return v
		case l.HeldEarlier:
			return v.plain(Wait, CheckSameIdentity, "waiting for another job with the same identity")
		}
		if lv := judgeLedger(v, j.Attempted, *l); lv.Outcome != Go {
			return lv
		}
	}
	if j.has(Revalidate) {
		return JudgeRevalidation(j)
	}
	return v
}

// SubjectSetting is the setting of each process that lists the tenants'
// replay subjects.
const SubjectSetting = "REPLAY_SUBJECT_ALLOW"

// waitsForSetting ends the reason of a job that waits for a worker with a
// setting this one lacks: how long, and what a person does.
const waitsForSetting = " (until its approval's expiry, whether or not something of its request was published: then it is blocked; " +
	"cancel the request if the setting was changed on purpose)"

// WaitsForSetting reports whether v leaves a job waiting for a worker with
// a setting the one that judged it lacks (Job.WaitedFor keeps its check).
func WaitsForSetting(v Verdict) bool {
	return v.Outcome == Wait && (v.Check == CheckSubject || v.Check == CheckNoRevalidator)
}

// workerWith says which worker a job that waited for check waited for.
func workerWith(check string) string {
	if check == CheckNoRevalidator {
		return "that has REVALIDATE_SUBJECT"
	}
	return "whose " + SubjectSetting + " allows it"
}

// SettingWaitEnds is when a job of r stops waiting for a worker with a
// setting the one that claimed it lacks (Job.SettingWaitOver): when its
// approval would stop letting it start (StartBy), whether or not the
// request started. A setting taken out on purpose on every process must
// not leave a running request's job to be published by the first worker
// given it back, weeks later, on an approval that long expired.
func SettingWaitEnds(t *Table, r Run) time.Time {
	return StartBy(t, r.request(), r.ApprovedAt)
}

// JudgeRevalidation is what the owning service's answer about a revalidate
// job means (Needs NeedRevalidation until given): a worker with no
// revalidation subject to ask waits for one that has it, and blocks it
// once SettingWaitOver; no answer or a no blocks it; only a yes is Go. A
// worker asks it when its claim judges the job and again right before the
// send.
func JudgeRevalidation(j Job) Verdict {
	v := Verdict{Class: j.Class, Rule: -1, Outcome: Go}
	r := j.Revalidation
	switch {
	case r == nil:
		v.Outcome, v.Needs = Wait, NeedRevalidation
		return v
	case r.NotAsked:
		none := "no revalidation subject is configured on this worker (REVALIDATE_SUBJECT), though the request was approved where one is"
		if j.SettingWaitOver {
			return v.plain(Block, CheckNoRevalidator, none+", and no worker that has it took the job before its approval's expiry: request again")
		}
		return v.plain(Wait, CheckNoRevalidator, none+": the job waits for a worker that has it"+waitsForSetting+"; set it on every worker as on serve")
	case r.Unanswered != "":
		return v.plain(Block, CheckRevalidationNone, "revalidation got no answer: "+r.Unanswered)
	case !r.Allow:
		return v.plain(Block, CheckRevalidationDeny, "revalidation denied: "+r.Reason)
	}
	return v
}

// judgeLedger is what the ledger's answer l about the identity of a job
// (attempted: a publish of its own may have landed) means for it, v when
// it lets the job go: skipped when another job replayed the identity (a
// dedupe or same_operation job; one of a stricter class, or one whose
// chain retention cut, is blocked, for a person to decide a second effect), blocked when another one may have
// landed and waits for a person, left
// for later while another one may have landed and nothing settled it yet
// (a replay by another tenant's request is blocked whatever the class:
// another tenant's dead letter can carry any message id, and its replay
// says nothing of this one's effect, review round 41)
// (unless the job's own publish may have landed too: it goes on as its own
// retry), and left for later when the ledger could not be read (nothing was
// sent, so its outcome is not unknown).
func judgeLedger(v Verdict, attempted bool, l Ledger) Verdict {
	switch {
	case l.Unreadable != "":
		return v.plain(Wait, CheckLedgerUnread, "ledger check failed; will retry: "+l.Unreadable)
	case l.Replayed && l.ChainCut != 0:
		return v.plain(Block, CheckLedger, fmt.Sprintf("already replayed%s (the replay ledger has it), and %s; resolve it by hand",
			replayedBy(l.ReplayedBy), chainCutBy(l.ChainCut)))
	case l.Replayed && l.ChainTwice != 0:
		return v.plain(Block, CheckLedger, fmt.Sprintf("already replayed%s (the replay ledger has it), and %s; resolve it by hand",
			replayedBy(l.ReplayedBy), chainTwiceBy(l.ChainTwice)))
	case l.Replayed && l.ReplayedBy == AnotherTenant:
		return v.plain(Block, CheckLedger, "already replayed by "+requestNamed(AnotherTenant)+" (the replay ledger has a replay of its message id on its subject), "+
			anotherTenantsReplay)
	case l.Replayed && !(Classing{Class: v.Class}).skipsReplayed():
		return v.plain(Block, CheckLedger, fmt.Sprintf("already replayed%s (the replay ledger has it), and a %s item is not published twice: "+
			"if its effect did not happen, resolve it by hand", replayedBy(l.ReplayedBy), v.Class))
	case l.Replayed && l.AppliedOnly:
		return v.plain(Done, CheckLedger, fmt.Sprintf("already applied, as a person found of its replay%s whose outcome nobody could know "+
			"(the replay ledger has it; no broker confirmed a replay of it)", replayedBy(l.ReplayedBy)))
	case l.Replayed:
		return v.plain(Done, CheckLedger, "already replayed"+replayedBy(l.ReplayedBy)+" (the replay ledger has it)")
	case l.Unsettled != 0:
		there := "settle it there first"
		if l.Unsettled == AnotherTenant {
			there = "an approver of that tenant settles it there (ask them; this tenant cannot see it)"
		}
		return v.plain(Block, CheckUnsettled, fmt.Sprintf("%s may have published this identity and waits for reconciliation: "+
			"%s, then request again if it was not applied", requestNamed(l.Unsettled), there))
	case l.InFlight != 0 && !attempted:
		return v.plain(Wait, CheckSameIdentity, fmt.Sprintf("waiting for a job of %s with the same identity, whose publish may have landed: "+
			"once it is settled, the ledger says whether this one is still needed", requestNamed(l.InFlight)))
	}
	return v
}

// replayedBy names request id as the one that replayed an identity ("" for
// 0: not known).
func replayedBy(id int64) string {
	if id == 0 {
		return ""
	}
	return " by " + requestNamed(id)
}

// AnotherTenant stands for a request of another tenant in the ledger's
// answers (Ledger.ReplayedBy, Unsettled, InFlight; Item.ReplayedBy): the
// message-on-subject rule is asked in every tenant, and a request of
// another is named to no reader of this one. (The ledger reads negate it,
// as a request id, for a replay a person found applied; the answers
// carry it positive.)
const AnotherTenant int64 = 1 << 62

// anotherTenantsReplay is what the rules say of an item a request of
// another tenant replayed (judgeLedger, replayedBefore): blocked for a
// person in every class (review round 41).
const anotherTenantsReplay = "which this tenant cannot see: whether that replay carried this dead letter's message is not known here, " +
	"so it is not published again, nor taken as replayed; if its effect did not happen, resolve it by hand"

// requestNamed is request id as a reason names it: "replay request N", or
// "a replay request of another tenant".
func requestNamed(id int64) string {
	if id == AnotherTenant {
		return "a replay request of another tenant (one that may replay to this subject too)"
	}
	return fmt.Sprintf("replay request %d", id)
}

// JudgeGate says whether a job JudgeJob let go may be published, on what
// the ledger says of its identities when it is read again in the publish
// gate, under the identities' locks, just before the job is marked
// attempted: JudgeJob judged on a reading made before this claim
// published anything, and another worker may have published, or
// replayed, the same identity since. It is pure. A job whose classes key
// no identity, or whose own publish may have landed (Attempted: it is
// its own retry), goes; otherwise the ledger's answer decides as in
// JudgeJob (l nil: not read, Wait).
func JudgeGate(j Job, l *Ledger) Verdict {
	v := Verdict{Class: j.Class, Rule: -1, Outcome: Go}
	if !j.classing().OncePerIdentity() || j.Attempted {
		return v
	}
	if l == nil {
		return v.plain(Wait, CheckLedgerUnread, "the ledger was not read in the publish gate; will retry")
	}
	return judgeLedger(v, false, *l)
}

// GateKeys are the identities a publish gate locks for a job (Identities),
// none when JudgeGate lets it go without reading the ledger.
func GateKeys(j Job, tenant, subject, msgID, operationID string) []string {
	if j.Attempted {
		return nil
	}
	return Identities(j.Class, j.Union, tenant, subject, msgID, operationID)
}

// Unsent is a job that ends now without being published in this claim:
// what the caller knows of its earlier attempts and of who holds it.
type Unsent struct {
	// State is the job's state before (pending, claimed, deferred,
	// unknown).
	State string
	// Attempted: a worker marked it about to be published (first attempt
	// time set, and no answer since said the publish did not land), so an
	// earlier publish may have landed.
	Attempted bool
	// LeaseLive: a worker holds it under a live lease; that worker checks
	// the request before it publishes and records what it did.
	LeaseLive bool
}

// JudgeUnsent says what a job that is not published now becomes when v
// ends it (Cancel, Block or Fail: a cancel, an emergency stop, a rule that
// refuses it before the publish). It is pure. A job a worker holds under
// a live lease is left to that worker (Wait). A job whose earlier publish
// may have landed (an unknown outcome, a worker that crashed after it
// marked the attempt) was maybe replayed: nobody may say it was not, so it
// needs a person (Reconcile, CheckMaybePublished) and keeps its dead
// letter until they decide. Otherwise v: nothing of it was ever sent.
func JudgeUnsent(v Verdict, u Unsent) Verdict {
	switch {
	case u.LeaseLive:
		return v.plain(Wait, v.Check, "a worker holds it; it checks the request before it publishes and records what it did")
	case v.Outcome != Cancel && v.Outcome != Block && v.Outcome != Fail:
		return v
	case u.Attempted || u.State == "unknown":
		return v.plain(Reconcile, CheckMaybePublished, v.Reason+"; but an earlier publish of it has no answer on record and may have landed: "+
			"check the target and say whether it was applied")
	}
	return v
}
