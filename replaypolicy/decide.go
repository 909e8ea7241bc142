package replaypolicy

import (
	"fmt"
	"sort"
	"strings"
	"time"

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

// Item is what Decide needs to know about one dead letter.
type Item struct {
	Tenant   string
	ItemType string
	// MsgID is the original Nats-Msg-Id, or the stable id derived at ingest
	// when the producer gave none (MsgIDDerived). Either way a replay
	// publishes under it.
	MsgID        string
	MsgIDDerived bool
	OperationID  string
	// Principal is who originally asked for the effect (Dlq-Principal).
	Principal       string
	OriginalSubject string
	// PayloadSHA256 is the hex SHA-256 of the payload a replay would send;
	// OriginalPayloadSHA256 is the one computed at ingest.
	PayloadSHA256         string
	OriginalPayloadSHA256 string
	// AlreadyReplayed is true when the replay ledger records a successful
	// replay of MsgID.
	AlreadyReplayed bool
	// Status is the dead letter's status (dlq.Status values: "quarantined",
	// "replay_requested", "replaying", "replay_failed", "replayed",
	// "discarded", "resolved"); "" when the caller does not know it.
	Status string
}

// Approval is one approver's sign-off on one intent.
type Approval struct {
	Approver quarantine.Actor
	// At is when the approval was given; it expires after the class's
	// approval_expiry.
	At time.Time
	// IntentHash is the hash of the exact intent that was approved.
	IntentHash string
}

// Request is a replay request as the approvers see it.
type Request struct {
	// Items is how many items the request covers (at least 1).
	Items int
	// Bulk marks a request made on a selection or filter rather than one
	// item; a request with Items > 1 is bulk either way.
	Bulk      bool
	Requester quarantine.Actor
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
	// refused or skipped, what it is waiting for, or what will happen.
	Reason string
	// SkipReason is set, to the same sentence as Reason, when Requirement is
	// Skip.
	SkipReason string
}

// ConfirmationPhrase is what the operator must type to confirm a replay of a
// class with typed_confirmation: "REPLAY <message id>" for a single item
// (manual is always single), so the operator reads the identity that will be
// published, and "REPLAY <n> ITEMS" for a bulk request, so they read the
// count. Decide compares it exactly after trimming surrounding spaces.
func ConfirmationPhrase(item Item, req Request) string {
	if req.Bulk || req.Items > 1 {
		return fmt.Sprintf("REPLAY %d ITEMS", req.Items)
	}
	return "REPLAY " + item.MsgID
}

// Decide says what replaying item as part of req needs under table t, as seen
// by actor at time now. It is pure: no I/O, no clock but now.
//
// In order, it skips an item already replayed (status "replayed", or a dedupe
// item the ledger marks replayed) and refuses: a discarded, resolved or
// unknown status; an unidentified requester or actor; a request made under
// another policy version; a blank reason; a missing original subject or
// message id; no items, bulk on a class without bulk, more items than the
// bulk cap, or a rate the class does not allow; then the class's own rules
// (same_operation: operation id, unedited payload, payload hash equal to the
// one at ingest; revalidate: an original principal); and, for classes with
// approvals, a request without an intent hash. Otherwise it counts the
// approvals that are valid now and checks the typed confirmation, and is
// Ready when both are complete. The worker still re-checks revalidate items
// when it executes.
func Decide(t *Table, item Item, actor quarantine.Actor, req Request, now time.Time) Decision {
	if t == nil {
		return Decision{Rule: -1, Requirement: Refused, Reason: "no replay policy is loaded, so nothing can be replayed"}
	}
	c, rule := t.ClassFor(item.ItemType)
	k := t.knobs[c]
	d := Decision{Class: c, Rule: rule, Requirement: requirementFor(k.Approvals), ApprovalsNeeded: k.Approvals}
	prefix := string(c) + ": "
	if rule < 0 {
		prefix = fmt.Sprintf("manual (no rule matches item type %q): ", item.ItemType)
	}
	refuse := func(format string, args ...any) Decision {
		d.Requirement = Refused
		d.Reason = prefix + fmt.Sprintf(format, args...)
		return d
	}
	skip := func(format string, args ...any) Decision {
		d.Requirement = Skip
		d.Reason = prefix + fmt.Sprintf(format, args...)
		d.SkipReason = d.Reason
		return d
	}

	switch item.Status {
	case "", "quarantined", "replay_requested", "replaying", "replay_failed":
	case "replayed":
		return skip("this item was already replayed successfully; it is skipped, not re-sent")
	case "discarded":
		return refuse("this item was discarded, and a discarded item cannot be replayed")
	case "resolved":
		return refuse("this item was resolved by hand, so it cannot be replayed")
	default:
		return refuse("this item has status %q, which the replay policy does not know; refusing to replay it", item.Status)
	}
	if c == Dedupe && item.AlreadyReplayed {
		return skip("message id %q was already replayed successfully; the item is skipped, not re-sent", item.MsgID)
	}
	if !req.Requester.Identified() {
		return refuse("the requester is not identified (an issuer and a subject are required); request again after signing in")
	}
	if !actor.Identified() {
		return refuse("you are not identified (an issuer and a subject are required); sign in again")
	}
	if req.PolicyVersion != t.Version() {
		return refuse("the policy changed since this request was made; request again")
	}
	if strings.TrimSpace(req.Reason) == "" {
		return refuse("a replay needs a reason; say why this item should be replayed")
	}
	if strings.TrimSpace(item.OriginalSubject) == "" {
		return refuse("no original subject: cannot be replayed; resolve it by hand")
	}
	if item.MsgID == "" {
		if c == Dedupe {
			return refuse("the original message id is mandatory for dedupe and this item has none; resolve it by hand")
		}
		return refuse("no message id: a replay must reuse the original identity and this item has none; resolve it by hand")
	}
	if req.Items < 1 {
		return refuse("a replay request must cover at least one item")
	}
	if (req.Bulk || req.Items > 1) && !k.Bulk {
		return refuse("bulk replay is not allowed for this class; request one item at a time")
	}
	if req.Items > k.BulkCap {
		return refuse("%d items is over this class's bulk cap of %d; split the request", req.Items, k.BulkCap)
	}
	rate, err := t.ValidateRate(c, req.Rate)
	if err != nil {
		return refuse("a rate of %v messages per second is not allowed; ask for more than 0 and at most %s, or leave it empty for the default of %s",
			req.Rate, formatRate(k.MaxRate), formatRate(k.DefaultRate))
	}

	switch c {
	case SameOperation:
		switch {
		case item.OperationID == "":
			return refuse("cannot guarantee idempotency without an operation id; reconcile by hand")
		case req.PayloadEdited:
			return refuse("the payload was edited, and only the same operation with its original payload may be replayed; reconcile by hand")
		case item.OriginalPayloadSHA256 == "" || item.PayloadSHA256 == "":
			return refuse("no payload hash to compare with the one taken at ingest, so the payload cannot be shown unchanged; reconcile by hand")
		case !strings.EqualFold(item.PayloadSHA256, item.OriginalPayloadSHA256):
			return refuse("the payload differs from the one received at ingest, and only the same operation with its original payload may be replayed; reconcile by hand")
		}
	case Revalidate:
		if item.Principal == "" {
			return refuse("no original principal (Dlq-Principal), so their authority cannot be re-checked; resolve it by hand")
		}
	}
	if k.Approvals > 0 && req.IntentHash == "" {
		return refuse("the request has no intent hash, so no approval can be bound to it; request again")
	}

	d.Rate = rate
	var waiting []string
	approvers, ignored := validApprovals(k, req, now)
	d.ApprovalsHave = len(approvers)
	if len(approvers) < k.Approvals {
		d.ActorCanApprove = !actor.SameAs(req.Requester) && !containsActor(approvers, actor)
		w := fmt.Sprintf("waiting for approval by %s: %d of %d", approverPhrase(k.Approvals), len(approvers), k.Approvals)
		if ignored != "" {
			w += " (" + ignored + ")"
		}
		waiting = append(waiting, w)
	}
	if k.TypedConfirmation {
		d.Confirmation = ConfirmationPhrase(item, req)
		switch typed := strings.TrimSpace(req.TypedConfirmation); {
		case typed == "":
			waiting = append(waiting, fmt.Sprintf("type %q to confirm", d.Confirmation))
		case typed != d.Confirmation:
			waiting = append(waiting, fmt.Sprintf("the typed confirmation does not match; type %q exactly", d.Confirmation))
		}
	}
	if len(waiting) > 0 {
		d.Reason = prefix + strings.Join(waiting, "; then ")
		return d
	}

	d.Ready = true
	switch c {
	case Rebuildable:
		d.Reason = prefix + fmt.Sprintf("ready to replay to %q at %s messages per second", item.OriginalSubject, formatRate(rate))
	case Dedupe:
		id := fmt.Sprintf("the original message id %q", item.MsgID)
		if item.MsgIDDerived {
			id = fmt.Sprintf("message id %q (derived at ingest, stable)", item.MsgID)
		}
		d.Reason = prefix + fmt.Sprintf("ready to replay to %q under %s; downstream dedupe drops it if it was already applied", item.OriginalSubject, id)
	case SameOperation:
		d.Reason = prefix + fmt.Sprintf("approved: replays operation %q with its original payload under message id %q", item.OperationID, item.MsgID)
	case Revalidate:
		d.Reason = prefix + fmt.Sprintf("approved; when the replay runs, the worker re-checks the authority of the original principal %q and the approver's own rights, and refuses if either check fails or gets no answer", item.Principal)
	default:
		d.Reason = prefix + fmt.Sprintf("approved by %d distinct approvers and confirmed: replays message id %q to %q", d.ApprovalsHave, item.MsgID, item.OriginalSubject)
	}
	return d
}

func approverPhrase(n int) string {
	if n == 1 {
		return "one approver who is not the requester"
	}
	return "two distinct approvers, neither of them the requester"
}

// validApprovals returns the distinct approvers whose approvals count now,
// and a phrase saying how many were ignored and why ("" when none were). An
// approval counts when its approver is identified and is not the requester,
// it approves this request's intent hash, it is dated no earlier than the
// request and no later than now, and now is before At + approval_expiry. An
// approver counts once however often they approved.
func validApprovals(k Knobs, req Request, now time.Time) ([]quarantine.Actor, string) {
	var (
		approvers []quarantine.Actor
		why       = map[string]int{}
	)
	for _, a := range req.Approvals {
		switch {
		case !a.Approver.Identified():
			why["unidentified approver"]++
		case a.Approver.SameAs(req.Requester):
			why["by the requester"]++
		case a.IntentHash != req.IntentHash:
			why["for a different intent"]++
		case a.At.IsZero():
			why["undated"]++
		case !req.RequestedAt.IsZero() && a.At.Before(req.RequestedAt):
			why["dated before the request"]++
		case a.At.After(now):
			why["dated in the future"]++
		case !now.Before(a.At.Add(k.ApprovalExpiry)):
			why["expired"]++
		case containsActor(approvers, a.Approver):
			why["same approver again"]++
		default:
			approvers = append(approvers, a.Approver)
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

func containsActor(list []quarantine.Actor, a quarantine.Actor) bool {
	for _, b := range list {
		if b.SameAs(a) {
			return true
		}
	}
	return false
}
