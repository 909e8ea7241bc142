package replaypolicy

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/quarantine-console/quarantine"
)

// Requirement is what a replay of one item needs, or that it cannot or need
// not happen. The zero value is Refused, so a Decision nobody filled in never
// lets anything through.
type Requirement int

// Requirements, from the decision's point of view.
const (
	// Refused: the replay cannot be made safe as requested; Decision.Reason
	// says why and what to do instead.
	Refused Requirement = iota
	// Direct: one operator with replay rights may replay without approval.
	Direct
	// OneApprover: one approver who is not the requester must sign off.
	OneApprover
	// TwoApprovers: two distinct approvers, neither the requester, must
	// sign off.
	TwoApprovers
	// Skip: there is nothing to do (the item was already replayed); the
	// item is left out of the replay, which is not an error.
	Skip
)

// String returns the requirement's name in snake case, as stored and shown.
func (r Requirement) String() string {
	switch r {
	case Refused:
		return "refused"
	case Direct:
		return "direct"
	case OneApprover:
		return "one_approver"
	case TwoApprovers:
		return "two_approvers"
	case Skip:
		return "skip"
	default:
		return fmt.Sprintf("requirement(%d)", int(r))
	}
}

func requirementFor(approvals int) Requirement {
	switch {
	case approvals <= 0:
		return Direct
	case approvals == 1:
		return OneApprover
	default:
		return TwoApprovers
	}
}

// Approval is one approver's sign-off on one intent.
type Approval struct {
	Approver quarantine.Actor
	// At is when the approval was given; it expires after the class's
	// approval_expiry.
	At time.Time
	// IntentHash is the hash of the exact intent that was approved.
	IntentHash string
	// Void says why the approval no longer counts whatever else holds:
	// its approver lost the right to approve (the approval that would
	// complete the request asked); "" while it counts.
	Void string
	// ApproverNow is the approver's identity as the directory has it now
	// (their email may have changed since they approved); zero when not
	// known. Separation of duties compares both (MayBeOne).
	ApproverNow quarantine.Actor
}

// Request is a replay request as the approvers see it.
type Request struct {
	// Class is the class the request was made for (its items' class);
	// JudgeRequest names it when no item is left.
	Class Class
	// Items is how many items the request covers (at least 1).
	Items int
	// Bulk marks a request made on a selection or filter rather than one
	// item; a request with Items > 1 is bulk either way.
	Bulk      bool
	Requester quarantine.Actor
	// RequesterNow is the requester's identity as the directory has it
	// now: their email may have changed since they asked, to one another
	// identity of theirs holds. Zero when not known. Separation of duties
	// compares both (MayBeOne).
	RequesterNow quarantine.Actor
	// Reason is the requester's free-text why; it must not be blank.
	Reason string
	// PayloadEdited is true when the requester changed the payload.
	PayloadEdited bool
	Approvals     []Approval
	// IntentHash is the hash of the immutable intent (items, payload hashes,
	// subjects, headers, policy version); approvals count only for it.
	IntentHash string
	// TypedConfirmation is what the operator typed to confirm; see
	// ConfirmationPhrase.
	TypedConfirmation string
	// RequestedAt is when the request was made; approvals dated before it
	// do not count. Zero skips that check.
	RequestedAt time.Time
	// PolicyVersion is the Table.Version the request was made under.
	PolicyVersion string
	// Rate is the requested publish rate in messages per second; 0 means the
	// class's default_rate.
	Rate float64
	// ReconciliationNote is what the requester checked, and the evidence,
	// before replaying items whose error class needs reconciliation first.
	ReconciliationNote string
	// Union is every class the request's items were classed by when it was
	// submitted (Terms.Union; empty: its class alone). Its approvals count
	// under the strictest approval_expiry of them, as JudgeRequest's did.
	Union []Class
	// KnownAs is each identity of the request's people with each address
	// the console has seen it with (at sign-in and refresh, and with each
	// draft, submit, edit and approval: dlq/replay reads them with the
	// request for its requester and everyone who ever approved it, and
	// adds the actor's when it judges one), and every identity linked to
	// them through addresses seen verified, with those addresses (an
	// account that had no part in the request, seen with one person's
	// address and later another's, makes them one); Unfollowed ends them
	// when the read stopped at its bound. Separation of duties takes every
	// person, the requester, each approver and the actor, as their
	// identity with all of them (personOf; invariant 14 over time and
	// across identities: the address one identity had when it drafted,
	// submitted or approved, on this request or an earlier one, may be
	// the one another identity of that person holds now).
	KnownAs []quarantine.Actor
}

// Decision is what Decide says about one item of one request.
type Decision struct {
	Class Class
	// Rule is the index in Table.Rules of the rule that gave Class, or -1
	// when no rule matched and the item fell to manual.
	Rule        int
	Requirement Requirement
	// ApprovalsNeeded is the class's approvals knob; ApprovalsHave counts
	// the approvals that are valid for this request now.
	ApprovalsNeeded int
	ApprovalsHave   int
	// Ready is true when the replay may execute now: nothing refuses it, the
	// approvals are complete and the confirmation (if any) was typed.
	Ready bool
	// ActorCanApprove is true when the actor may add an approval that
	// counts: approvals are still missing, the actor is not the requester,
	// and has not already approved.
	ActorCanApprove bool
	// Confirmation is the phrase the operator must type, when the class
	// requires a typed confirmation and the request is not refused.
	Confirmation string
	// Rate is the publish rate to use in messages per second, when the
	// request is not refused or skipped.
	Rate float64
	// Reason is a sentence shown verbatim to the operator: why it is
	// refused or skipped, what it is waiting for, or what will happen;
	// Check names the check that refused, skipped or holds it ("" when
	// ready).
	Reason string
	Check  string
	// SkipReason is set, to the same sentence as Reason, when Requirement is
	// Skip.
	SkipReason string
}

// ConfirmationPhrase is what the operator must type to confirm a replay of a
// class with typed_confirmation: "REPLAY <message id>" for a single item
// (manual is always single), so the operator reads the identity that will be
// published, and "REPLAY <n> ITEMS" for a bulk request, so they read the
// count. The message id is written as phraseID writes it, quoted when it
// would not read as itself. Decide compares the phrase exactly with what
// was typed, less the spaces around it.
func ConfirmationPhrase(item Item, req Request) string {
	if req.Bulk || req.Items > 1 {
		return fmt.Sprintf("REPLAY %d ITEMS", req.Items)
	}
	return "REPLAY " + phraseID(item.MsgID)
}

// phraseID is a message id as a confirmation phrase writes it: as it is
// when every character of it prints (unicode.IsPrint: no space but U+0020,
// no control, format or invalid byte), it neither starts nor ends with a
// space, holds no run of two spaces and does not start with a quote; else
// quoted as Go quotes a string, each space of a run of two or more written
// \x20 (REPLAY "abc " for an id that ends in a space, REPLAY "ref\x20\x2042"
// for "ref  42", REPLAY "a\u202eb" for one holding a bidi override). The
// producer chooses the id and ingest keeps it exactly, blanks included:
// written bare, such an id could never be typed (the typed phrase is
// trimmed) or not be read (a page collapses a run of spaces unless told
// not to, and a reader does not count them). So a phrase never holds two
// spaces in a row or white space but single U+0020 between other
// characters. A bare id never starts with a quote and a quoted one always
// does and unquotes (strconv.Unquote) to the id, so no two ids share a
// phrase.
func phraseID(id string) string {
	bare := id != "" && id[0] != ' ' && id[len(id)-1] != ' ' && id[0] != '"' && !strings.Contains(id, "  ") &&
		strings.IndexFunc(id, func(r rune) bool { return r == unicode.ReplacementChar || !unicode.IsPrint(r) }) < 0
	if bare {
		return id
	}
	// %q leaves U+0020 as it is and writes every other space escaped, and
	// no escape holds a space. (fmt, not strconv: the rule files import
	// only what TestReplayRulesArePure allows.)
	q := fmt.Sprintf("%q", id)
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if q[i] == ' ' && (q[i-1] == ' ' || q[i+1] == ' ') {
			b.WriteString(`\x20`)
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// Decide says what replaying item as part of req needs under table t, as seen
// by actor at time now. It is pure: no I/O, no clock but now. It is the
// request's rules applied to one item: JudgeItem (AtRequest, with the
// request's PayloadEdited), then JudgeRequest and Require; see them for the
// rules and their order. The worker still re-checks revalidate items when it
// executes.
func Decide(t *Table, item Item, actor quarantine.Actor, req Request, now time.Time) Decision {
	item.PayloadEdited = item.PayloadEdited || req.PayloadEdited
	return DecideItems(t, []Item{item}, actor, req, now)
}

// DecideItems is Decide for a request of items (all of one class, in
// order): each is judged AtRequest, then the request's rules over their
// verdicts. Each item is judged as edited or not by its own payload
// (Item.PayloadEdited), never by the request's: an edit of one item does
// not make another, untouched, an edited same_operation item, which the
// rules refuse (as submit judges it). The request's PayloadEdited raises
// its approvals (JudgeRequest).
func DecideItems(t *Table, items []Item, actor quarantine.Actor, req Request, now time.Time) Decision {
	verdicts := make([]Verdict, len(items))
	for i, item := range items {
		verdicts[i] = JudgeItem(t, item, AtRequest)
	}
	terms, v := JudgeRequest(t, verdicts, req)
	if v.Outcome != Go {
		return v.Decision(t)
	}
	return Require(terms, actor, req, now)
}

// Terms are what a request comes to before anyone approves it: the class
// its items are replayed under, with its knobs (approvals raised to one
// when a payload was edited: Edited), the publish rate and the phrase to
// type, if any.
type Terms struct {
	Class        Class
	Rule         int
	Knobs        Knobs
	Edited       bool
	Rate         float64
	Confirmation string
	// Raised names the error class that raised the approvals above the
	// class's ("" when none did).
	Raised string
	// SelfFixed names the item type whose fix, recorded by the requester,
	// raised the approvals to one (FixedByRequester; "" when none did).
	SelfFixed string
	// Union is every class the going items are classed by, whose strictest
	// knobs Knobs are (Table.UnionKnobs): what the request is held to from
	// its submit to its execution (Request.Union, Run.Union).
	Union []Class
	first Verdict // the first item, which the sentences name
}

// JudgeRequest applies the request's own rules to a request whose items were
// judged verdicts (in order; all of one class by construction), under the
// strictest knobs of every class any of its items is classed by
// (Table.UnionKnobs: approvals are the most any asks for). Every item
// counts: the first verdict that blocks decides; items already replayed
// (Done) are left out, and when nothing is left to replay, the request is
// Done (a request of no items too). Then, in order, it blocks: an
// unidentified requester, a request made under another policy version, a
// blank reason, no items, bulk on a class without bulk, more items than
// the bulk cap, a rate the class does not allow, and, for a request that
// needs approval (by its class, because a payload was edited, or because
// an item's error class asks for approvers: ErrorRule.Approvals), a
// missing intent hash; and a request holding an item whose error class
// needs reconciliation first without a reconciliation note. Otherwise it
// returns the request's Terms and a Go verdict.
func JudgeRequest(t *Table, verdicts []Verdict, req Request) (Terms, Verdict) {
	if t == nil {
		return Terms{}, Verdict{Rule: -1}.plain(Block, CheckNoPolicy, "no replay policy is loaded, so nothing can be replayed")
	}
	var first, done *Verdict
	for i := range verdicts {
		switch verdicts[i].Outcome {
		case Go:
			if first == nil {
				first = &verdicts[i]
			}
		case Done:
			if done == nil {
				done = &verdicts[i]
			}
		default:
			return Terms{}, verdicts[i]
		}
	}
	switch {
	case first == nil && done != nil:
		return Terms{}, *done
	case first == nil:
		v := Verdict{Class: req.Class, Rule: -1}
		return Terms{}, v.plain(Done, CheckNothingLeft, "nothing to replay: the rules left every item of this request out (each item's reason is beside it)")
	}
	v := *first
	union := RequestUnion(verdicts)
	// The request's own class counts too, as JudgeDraft has it: an item
	// whose class came out weaker at the submit than the draft it was
	// drafted in (none does today: an item's class is fixed by what the
	// draft froze, and its generation only grows) would otherwise loosen
	// the request's limits. (TestRev37RequestKeepsItsOwnClassesLimits)
	k := t.UnionKnobs(append(append([]Class(nil), union...), req.Class)...)
	switch {
	case !req.Requester.Identified():
		return Terms{}, v.with(Block, CheckRequester, "the requester is not identified (an issuer and a subject are required); request again after signing in")
	case t.Stale(req.PolicyVersion):
		return Terms{}, v.with(Block, CheckPolicy, "the policy changed since this request was made; request again")
	case strings.TrimSpace(req.Reason) == "":
		return Terms{}, v.with(Block, CheckReason, "a replay needs a reason; say why this item should be replayed")
	case req.Items < 1:
		return Terms{}, v.with(Block, CheckNoItems, "a replay request must cover at least one item")
	case (req.Bulk || req.Items > 1) && !k.Bulk:
		return Terms{}, v.with(Block, CheckBulk, "bulk replay is not allowed for this class; request one item at a time")
	case req.Items > k.BulkCap:
		return Terms{}, v.with(Block, CheckBulkCap, "%d items is over this class's bulk cap of %d; split the request", req.Items, k.BulkCap)
	}
	rate, err := validateRate(k, req.Rate)
	if err != nil {
		return Terms{}, v.with(Block, CheckRate, "a rate of %v messages per second is not allowed; ask for more than 0 and at most %s, or leave it empty for the default of %s",
			req.Rate, formatRate(k.MaxRate), formatRate(k.DefaultRate))
	}
	if req.PayloadEdited && k.Approvals < 1 {
		k.Approvals = 1 // an edited payload is never published on one person's word
	}
	raised := ""
	for _, iv := range verdicts {
		if iv.Outcome != Go {
			continue
		}
		ec := iv.Item.ErrorClass
		r := t.ErrorRule(ec)
		if r.ReconciliationNote && strings.TrimSpace(req.ReconciliationNote) == "" {
			return Terms{}, iv.with(Block, CheckReconcileNote, "message id %q has error class %q, which needs reconciliation first: "+
				"check whether its effect happened, and say in the reconciliation note what you checked and the evidence", iv.Item.MsgID, ec)
		}
		if r.Approvals > k.Approvals {
			k.Approvals, raised = r.Approvals, ec
		}
	}
	selfFixed := ""
	for _, iv := range verdicts {
		if iv.Outcome == Go && k.Approvals < 1 && FixedByRequester(t, iv.Item, req.KnownAs, req.Requester, req.RequesterNow) {
			k.Approvals, selfFixed = 1, iv.Item.ItemType // a fix the requester recorded has an edit's standing
		}
	}
	if k.Approvals > 0 && req.Items > MaxApprovableItems {
		// A class without approvals may allow more; this request needs one
		// all the same, and no approver can approve it whole.
		return Terms{}, v.with(Block, CheckBulkCap, "%d items is over the %d a request that needs an approval can hold (%s), as the request page lists no more for the approver; split the request",
			req.Items, MaxApprovableItems, approvalsCause(req.PayloadEdited, raised, selfFixed))
	}
	if k.Approvals > 0 && req.IntentHash == "" {
		return Terms{}, v.with(Block, CheckIntent, "the request has no intent hash, so no approval can be bound to it; request again")
	}
	terms := Terms{Class: v.Class, Rule: v.Rule, Knobs: k, Rate: rate, Edited: req.PayloadEdited, Raised: raised, SelfFixed: selfFixed,
		Union: union, first: v}
	terms.Confirmation = t.Confirmation(v.Class, union, v.Item, req)
	return terms, v
}

// RequestUnion is every class a request whose items were judged verdicts
// must meet the knobs of: the class and the Union of each item that goes,
// each once, in order of first appearance. It is JudgeRequest's
// Terms.Union, which the submit stores with the request
// (replay_requests.classes); a page that shows what a draft's submit
// will ask (its typed confirmation, its rate limits) reads it so before
// the submit.
func RequestUnion(verdicts []Verdict) []Class {
	var union []Class
	for _, iv := range verdicts {
		if iv.Outcome == Go {
			union = append(union, iv.Class)
			union = append(union, iv.Classing.Union...)
		}
	}
	return unionOf(union)
}

// Require says what a request of terms needs now, as seen by actor at now:
// it counts the approvals that are valid (see validApprovals) and checks
// the typed confirmation, and the request is Ready when both are complete.
// It is pure: no I/O, no clock but now.
func Require(terms Terms, actor quarantine.Actor, req Request, now time.Time) Decision {
	v, k := terms.first, terms.Knobs
	d := Decision{Class: terms.Class, Rule: terms.Rule, Requirement: requirementFor(k.Approvals), ApprovalsNeeded: k.Approvals,
		Rate: terms.Rate, Confirmation: terms.Confirmation}
	p := v.prefix()
	if !actor.Identified() {
		return v.with(Block, CheckActor, "you are not identified (an issuer and a subject are required); sign in again").Decision(nil)
	}
	var waiting []string
	approvers, ignored := validApprovals(k, req, now)
	d.ApprovalsHave = len(approvers)
	if len(approvers) < k.Approvals {
		d.ActorCanApprove = MayApprove(req, actor, quarantine.Actor{}).Outcome == Go && !containsPerson(approvers, req.actor(actor, quarantine.Actor{}))
		w := fmt.Sprintf("waiting for approval by %s: %d of %d", approverPhrase(k.Approvals), len(approvers), k.Approvals)
		switch {
		case terms.Edited && k.Approvals == 1:
			w = fmt.Sprintf("a payload was edited, so it waits for approval by %s who sees the change: %d of %d", approverPhrase(1), len(approvers), k.Approvals)
		case terms.Raised != "":
			w = fmt.Sprintf("an item's error class %q needs %s whatever the class: %d of %d", terms.Raised, approverPhrase(k.Approvals), len(approvers), k.Approvals)
		case terms.SelfFixed != "" && k.Approvals == 1:
			w = fmt.Sprintf("the fix marker of item type %q that lets it replay was recorded by the requester, so it waits for approval by %s: %d of %d",
				terms.SelfFixed, approverPhrase(1), len(approvers), k.Approvals)
		}
		if ignored != "" {
			w += " (" + ignored + ")"
		}
		waiting = append(waiting, w)
		d.Check = CheckApprovals
	}
	if terms.Confirmation != "" {
		if c := Confirmed(terms.Confirmation, req.TypedConfirmation); c.Outcome != Go {
			waiting = append(waiting, c.Reason)
			if d.Check == "" {
				d.Check = CheckConfirmation
			}
		}
	}
	if len(waiting) > 0 {
		d.Reason = p + strings.Join(waiting, "; then ")
		return d
	}
	d.Ready = true
	item := v.Item
	if terms.Edited {
		d.Reason = p + fmt.Sprintf("approved with its edited payload: replays message id %q to %q with the edited bytes, marked Dlq-Payload-Edited",
			item.MsgID, item.OriginalSubject)
		return d
	}
	switch terms.Class {
	case Rebuildable:
		d.Reason = p + fmt.Sprintf("ready to replay to %q at %s messages per second", item.OriginalSubject, formatRate(terms.Rate))
	case Dedupe:
		id, drops := fmt.Sprintf("the original message id %q", item.MsgID), "it if it was already applied"
		if item.MsgIDDerived {
			// The original was processed under no id: only a replay of
			// it can have been applied under this one.
			id = fmt.Sprintf("message id %q (derived at ingest, stable)", item.MsgID)
			drops = "a replay of it already applied under this id; the original carried no message id, so whether the original itself was applied no dedupe can tell"
		}
		d.Reason = p + fmt.Sprintf("ready to replay to %q under %s; downstream dedupe drops %s", item.OriginalSubject, id, drops)
	case SameOperation:
		d.Reason = p + fmt.Sprintf("approved: replays operation %q with its original payload under message id %q", item.OperationID, item.MsgID)
	case Revalidate:
		d.Reason = p + fmt.Sprintf("approved; when the replay runs, the worker re-checks the authority of the original principal %q and the approver's own rights, and refuses if either check fails or gets no answer", item.Principal)
	default:
		d.Reason = p + fmt.Sprintf("approved by %d distinct approvers and confirmed: replays message id %q to %q", d.ApprovalsHave, item.MsgID, item.OriginalSubject)
	}
	return d
}

// Decision is the Decision of a request that v stops (under table t):
// refused, or skipped when v is Done.
func (v Verdict) Decision(t *Table) Decision {
	d := Decision{Class: v.Class, Rule: v.Rule, Requirement: Refused, Check: v.Check, Reason: v.Reason}
	if t != nil {
		k, _ := t.Knobs(v.Class)
		d.ApprovalsNeeded = k.Approvals
	}
	if v.Outcome == Done {
		d.Requirement, d.SkipReason = Skip, v.Reason
	}
	return d
}

// Confirmed says whether typed (trimmed) is the confirmation phrase, and
// if not, what to type. The sentence holds the phrase as it is, between
// quotes, not Go-quoted: a phrase prints and holds no run of spaces
// (phraseID), and escaping a quoted id's quotes would show what is not to
// be typed.
func Confirmed(phrase, typed string) Verdict {
	v := Verdict{Outcome: Go}
	switch typed = strings.TrimSpace(typed); {
	case phrase == "" || typed == phrase:
		return v
	case typed == "":
		return v.plain(Block, CheckConfirmation, fmt.Sprintf(`type "%s" to confirm`, phrase))
	}
	return v.plain(Block, CheckConfirmation, fmt.Sprintf(`the typed confirmation does not match; type "%s" exactly`, phrase))
}

// SubmitVerdict says whether the requester may submit a request that d
// decides, having typed typed: not when it is refused, not without the
// typed confirmation its class asks for, and a request that needs no
// approval only when it is ready to run.
func SubmitVerdict(d Decision, typed string) Verdict {
	v := Verdict{Class: d.Class, Rule: d.Rule, Outcome: Go}
	switch {
	case d.Requirement == Refused:
		return v.plain(Block, d.Check, d.Reason)
	case d.Confirmation != "" && strings.TrimSpace(typed) != d.Confirmation:
		return v.plain(Block, CheckConfirmation, fmt.Sprintf(`type "%s" to confirm`, d.Confirmation))
	case d.Requirement == Direct && !d.Ready:
		return v.plain(Block, d.Check, d.Reason)
	}
	return v
}

// approvalsCause says why a request needs an approval: the error class
// raised of one of its items, an edited payload, or its class (or one of
// its union).
func approvalsCause(edited bool, raised, selfFixed string) string {
	switch {
	case raised != "":
		return fmt.Sprintf("an item's error class %q asks for it", raised)
	case edited:
		return "an edited payload"
	case selfFixed != "":
		return fmt.Sprintf("the fix marker of item type %q was recorded by the requester", selfFixed)
	}
	return "its class asks for it"
}

func approverPhrase(n int) string {
	if n == 1 {
		return "one approver who is not the requester"
	}
	return "two distinct approvers, neither of them the requester"
}

// validApprovals returns the distinct approvers whose approvals count now,
// and a phrase saying how many were ignored and why ("" when none were),
// by the rule judgeApprovals applies to each approval.
func validApprovals(k Knobs, req Request, now time.Time) ([]person, string) {
	approvers, ignored := judgeApprovals(k, req, now)
	why := map[string]int{}
	for _, reason := range ignored {
		if reason != "" {
			why[reason]++
		}
	}
	if len(why) == 0 {
		return approvers, ""
	}
	total := 0
	parts := make([]string, 0, len(why))
	for reason, n := range why {
		total += n
		parts = append(parts, fmt.Sprintf("%d %s", n, reason))
	}
	sort.Strings(parts)
	noun := "approvals"
	if total == 1 {
		noun = "approval"
	}
	return approvers, fmt.Sprintf("%d %s ignored: %s", total, noun, strings.Join(parts, ", "))
}

// judgeApprovals judges each approval of req at now: it returns the
// distinct approvers whose approvals count, and for each approval, in the
// order of req.Approvals, why it does not count ("" when it does). An
// approval counts when its approver is identified and may not be the
// requester (MayBeOne: as recorded, or as the directory has them now,
// each under every address the console has seen their identity with:
// KnownAs),
// it is not void (its approver still held the right when last asked), it
// approves this request's intent hash, it is dated no earlier than the
// request and no later than now, and now is before At +
// approval_expiry. An approver counts once however often they approved,
// and under however many identities (MayBeOne, with every address the
// console has seen each identity with).
func judgeApprovals(k Knobs, req Request, now time.Time) ([]person, []string) {
	var approvers []person
	ignored := make([]string, len(req.Approvals))
	for i, a := range req.Approvals {
		p := req.approver(a)
		switch why := approvalVoid(k, req, a, now); {
		case why == IgnoredUnidentified:
			ignored[i] = why
		case p.mayBe(req.requester()):
			ignored[i] = IgnoredRequester
		case why != "":
			ignored[i] = why
		case containsPerson(approvers, p):
			ignored[i] = IgnoredAgain
		default:
			approvers = append(approvers, p)
		}
	}
	return approvers, ignored
}

// approvalVoid says why approval a of req does not count at now by what
// it is, whoever its approver may be (judgeApprovals judges the people:
// the requester, the same person again), "" when it counts: its approver
// is identified, it is not void, it approves req's intent hash, it is
// dated no earlier than the request and no later than now, and now is
// before At + approval_expiry.
func approvalVoid(k Knobs, req Request, a Approval, now time.Time) string {
	switch {
	case !a.Approver.Identified():
		return IgnoredUnidentified
	case a.Void != "":
		return IgnoredLostRight
	case a.IntentHash != req.IntentHash:
		return IgnoredOtherIntent
	case a.At.IsZero():
		return IgnoredUndated
	case !req.RequestedAt.IsZero() && a.At.Before(req.RequestedAt):
		return IgnoredBeforeRequest
	case a.At.After(now):
		return IgnoredFuture
	case !now.Before(a.At.Add(k.ApprovalExpiry)):
		return IgnoredExpired
	}
	return ""
}

// CountedAtApproval are the approvals of req that counted when it was
// approved, at approvedAt, by what each is (approvalVoid, the rule
// judgeApprovals counts them by): the approvals its approval rests on, and
// the only ones a worker judges it by (JudgeRun: whether their approvers
// still hold the right, and are still distinct people, as the directory
// has them then; StartBy: how long they let it start). An approval that
// had expired, approved another intent or was void by then never counted,
// and counts for nothing later. None when approvedAt is zero (never
// approved) or req's class is not in t.
func CountedAtApproval(t *Table, req Request, approvedAt time.Time) []Approval {
	k, ok := t.RequestKnobs(req.Class, req.Union)
	if !ok || approvedAt.IsZero() {
		return nil
	}
	var out []Approval
	for _, a := range req.Approvals {
		if approvalVoid(k, req, a, approvedAt) == "" {
			out = append(out, a)
		}
	}
	return out
}

// StartBy is when the approval of req, approved at approvedAt, stops
// letting it start: each approval lets it start for approval_expiry after
// it was given (the strictest of its class's and Union's), so the first
// approval it counted when it was approved (CountedAtApproval) bounds it,
// and approvedAt does for a request approved without one. Zero when it
// was never approved or its class is not in t.
func StartBy(t *Table, req Request, approvedAt time.Time) time.Time {
	k, ok := t.RequestKnobs(req.Class, req.Union)
	if !ok || approvedAt.IsZero() {
		return time.Time{}
	}
	from := approvedAt
	for _, a := range CountedAtApproval(t, req, approvedAt) {
		if a.At.Before(from) {
			from = a.At
		}
	}
	return from.Add(k.ApprovalExpiry)
}

// FirstLapse is when the first approval of req that counts at now (by the
// rules JudgeApprovals counts with) stops counting; zero when none counts
// or req's class is not in t. Of a request waiting for approval, that is
// when it may fall back a count.
func FirstLapse(t *Table, req Request, now time.Time) time.Time {
	k, ok := t.RequestKnobs(req.Class, req.Union)
	if !ok {
		return time.Time{}
	}
	_, ignored := judgeApprovals(k, req, now)
	var first time.Time
	for i, a := range req.Approvals {
		if e := a.At.Add(k.ApprovalExpiry); ignored[i] == "" && (first.IsZero() || e.Before(first)) {
			first = e
		}
	}
	return first
}

// Why an approval does not count (judgeApprovals), as the rules' messages
// count them ("1 approval ignored: 1 expired") and the request page says it
// beside the approval.
const (
	IgnoredUnidentified  = "unidentified approver"
	IgnoredRequester     = "by the requester"
	IgnoredLostRight     = "by an approver who lost the right"
	IgnoredOtherIntent   = "for a different intent"
	IgnoredUndated       = "undated"
	IgnoredBeforeRequest = "dated before the request"
	IgnoredFuture        = "dated in the future"
	IgnoredExpired       = "expired"
	IgnoredAgain         = "same approver again"
	IgnoredNoClass       = "its class is not in the policy table"
)

// person is someone of a request under every name it knows them by: as
// it recorded them, as the directory has them now, and under each address
// the console has seen their identity with (Request.KnownAs; personOf);
// zero actors are not known and match nobody.
type person []quarantine.Actor

// Unfollowed is the name a read of Request.KnownAs (or Run.KnownAs,
// Item.FixRecordedByKnownAs) adds when it stopped following links between
// identities at its bound (dlq/replay: so many linked accounts, or so long
// a chain of them, that the rest was not read). Who else its people are is
// then not known, and the rules never take that for "someone else": every
// person made with it may be anyone (mayBe is true), which only takes
// rights away (nobody approves the request, no approval counts for
// another's, the worker publishes nothing) until an admin looks.
var Unfollowed = quarantine.Actor{Issuer: UnfollowedIssuer}

// UnfollowedIssuer is the issuer of Unfollowed, which no identity provider
// has (it is no URL).
const UnfollowedIssuer = "quarantine:unfollowed"

// mayBe reports whether p and q may be one person: SamePerson of any name
// of p and any name of q; always when either was made from names whose
// links were not all followed (Unfollowed).
func (p person) mayBe(q person) bool {
	if p.unfollowed() || q.unfollowed() {
		return true
	}
	for _, x := range p {
		for _, y := range q {
			if SamePerson(x, y) {
				return true
			}
		}
	}
	return false
}

// unfollowed reports whether p holds Unfollowed.
func (p person) unfollowed() bool {
	for _, x := range p {
		if x == Unfollowed {
			return true
		}
	}
	return false
}

// personOf is who (as recorded, as the directory has them now) with every
// address in knownAs the console has seen their identity with, and,
// through those, everyone knownAs links them to: an identity seen with an
// address that is one of theirs (SamePerson's Mailbox) is theirs too, with
// every address it was seen with, and so on until nothing more joins (a
// person with three accounts, the middle one sharing an address with
// each of the others, is one person even when that middle account's
// approval has lapsed, or was deleted by an edit, or when it never had
// any part in the request). It is the one way the rules make a person of
// a requester, an approver, an actor or a fix marker's recorder. knownAs
// is what dlq/replay reads for them: every address of the request's
// people (its requester, everyone who ever approved it) and of the actor,
// and the addresses seen verified of every identity linked to them (the
// database follows the links, bounded; Unfollowed when it stopped at its
// bound, which makes the person anyone's).
func personOf(knownAs []quarantine.Actor, who ...quarantine.Actor) person {
	p := append(person(nil), who...)
	boxes := make([]string, len(p), len(p)+len(knownAs))
	for i, w := range who {
		boxes[i] = Mailbox(w.Email)
	}
	known := make([]string, len(knownAs))
	for i, a := range knownAs {
		if a == Unfollowed {
			return append(p, Unfollowed)
		}
		known[i] = Mailbox(a.Email)
	}
	in := make([]bool, len(knownAs))
	for grew := true; grew; {
		grew = false
		for i, a := range knownAs {
			if in[i] {
				continue
			}
			for j, x := range p {
				if a.SameIdentity(x) || (known[i] != "" && known[i] == boxes[j]) {
					p, boxes, in[i], grew = append(p, a), append(boxes, known[i]), true, true
					break
				}
			}
		}
	}
	return p
}

// approver is the approver of a as a person of req: as a recorded them,
// as the directory has them now, and under every address the console has
// seen their identity with (req.KnownAs).
func (req Request) approver(a Approval) person {
	return personOf(req.KnownAs, a.Approver, a.ApproverNow)
}

// requester is the requester of req as a person: as it recorded them, as
// the directory has them now, and under every address the console has
// seen their identity with (drafting, submitting, editing, signing in:
// req.KnownAs).
func (req Request) requester() person {
	return personOf(req.KnownAs, req.Requester, req.RequesterNow)
}

// actor is actor (as signed in; actorNow: as the directory has them now,
// zero when not known) as a person of req: with every address the
// console has seen their identity with (req.KnownAs, to which whoever
// judges an actor adds theirs).
func (req Request) actor(actor, actorNow quarantine.Actor) person {
	return personOf(req.KnownAs, actor, actorNow)
}

func containsPerson(list []person, p person) bool {
	for _, b := range list {
		if p.mayBe(b) {
			return true
		}
	}
	return false
}

// CountApprovals is how many distinct approvers' approvals of req count at
// at, by the rules Require counts them with (validApprovals): the one
// count every page, list and message shows. A table without the class
// counts none.
func CountApprovals(t *Table, req Request, at time.Time) int {
	n, _ := JudgeApprovals(t, req, at)
	return n
}

// JudgeApprovals is CountApprovals with, for each approval of req in the
// order of req.Approvals, why it does not count at at (one of the Ignored
// phrases; "" when it counts): what a page says beside each approval, by
// the rule that makes the count. A table without the class counts none,
// and says so of each (IgnoredNoClass). It is pure.
func JudgeApprovals(t *Table, req Request, at time.Time) (int, []string) {
	var k Knobs
	ok := t != nil
	if ok {
		k, ok = t.RequestKnobs(req.Class, req.Union)
	}
	if !ok {
		ignored := make([]string, len(req.Approvals))
		for i := range ignored {
			ignored[i] = IgnoredNoClass
		}
		return 0, ignored
	}
	approvers, ignored := judgeApprovals(k, req, at)
	return len(approvers), ignored
}
