package replaypolicy

import (
	"fmt"
	"strings"
)

// Outcomes counts the items of a request by what became of them (the item
// outcomes of DESIGN.md, "Replay semantics, refined"). Items left out when
// the selection was frozen or submitted count as skipped (already
// replayed) or blocked (anything else).
type Outcomes struct {
	// Running are the items still to be decided: waiting, claimed,
	// deferred, or retried after an unknown outcome.
	Running                                             int
	Replayed, Skipped                                   int
	Deferred                                            int // of Running: inside a duplicate window
	Suppressed, Blocked, NeedsReconciliation, Cancelled int
	// NotApplied are the items a person settled "not applied, leave it"
	// after checking the target: their dead letters are back in
	// quarantine.
	NotApplied int
	// Applied are the items a person settled "applied" after checking the
	// target: done, but not known to be the broker's store of this
	// replay's publish, so never counted replayed.
	Applied int
}

// JudgeRequestOutcome says what a request whose items came to o is. It is
// pure. While items are running: Wait. When every item was replayed,
// settled applied or skipped: Done (the request is done). Otherwise the request is done with
// problems (Block by CheckProblems), and the sentence counts every outcome.
func JudgeRequestOutcome(o Outcomes) Verdict {
	v := Verdict{Rule: -1}
	switch {
	case o.Running > 0:
		return v.plain(Wait, "", fmt.Sprintf("%d of %d items still to go", o.Running, o.total()))
	case o.Suppressed+o.Blocked+o.NeedsReconciliation+o.Cancelled+o.NotApplied == 0:
		return v.plain(Done, "", "done: "+o.String())
	}
	return v.plain(Block, CheckProblems, "done with problems: "+o.String())
}

func (o Outcomes) total() int {
	return o.Running + o.Replayed + o.Applied + o.Skipped + o.Suppressed + o.Blocked + o.NeedsReconciliation + o.Cancelled + o.NotApplied
}

// String counts the outcomes that happened, in the order people read them:
// "3 replayed, 1 blocked, 2 need reconciliation".
func (o Outcomes) String() string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{
		{o.Replayed, "replayed"}, {o.Applied, AppliedText}, {o.Skipped, "skipped"}, {o.Running - o.Deferred, "to go"}, {o.Deferred, "deferred"},
		{o.Suppressed, "suppressed as a duplicate"}, {o.Blocked, "blocked"},
		{o.NeedsReconciliation, NeedReconciliation(o.NeedsReconciliation)}, {o.Cancelled, "cancelled"}, {o.NotApplied, NotAppliedText},
	} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(parts) == 0 {
		return "no items"
	}
	return strings.Join(parts, ", ")
}

// StopPhrase is what a person types to stop replays in an emergency.
const StopPhrase = "STOP"

// JudgeStop says whether an emergency stop may go ahead: it needs a reason
// (auditors read why) and the typed StopPhrase (a stop cannot be undone:
// what was stopped must be requested again). Who may stop is the route's
// permission (approvers and admins of the tenant), not a rule of the
// request.
func JudgeStop(reason, typed string) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	switch {
	case strings.TrimSpace(reason) == "":
		return v.plain(Block, CheckStopReason, "say why the replay is stopped: auditors and the requester read it")
	case strings.TrimSpace(typed) != StopPhrase:
		return v.plain(Block, CheckStopConfirmation, fmt.Sprintf("type %q to stop: nothing not yet published will be, and the rest must be requested again", StopPhrase))
	}
	return v
}

// Choice is what a person decides about an item whose outcome nobody can
// know (needs_reconciliation), after checking the target.
type Choice string

// The choices.
const (
	// Applied: the effect happened; the item counts as replayed.
	Applied Choice = "applied"
	// Republish: the effect did not happen; publish it again under the same
	// message id (the request must still be one that publishes).
	Republish Choice = "republish"
	// NotApplied: the effect did not happen and it is not published again;
	// the dead letter goes back to quarantine.
	NotApplied Choice = "not_applied"
)

// JudgeReconcile says whether choice d, with note, may settle an item
// whose request has status requestStatus and needed approvals distinct
// approvers to publish (PublishApprovals). It is pure. The choice must be
// one of the three; Republish must pass JudgeRepublish (before the note:
// a republish refused for what the item is is refused for that, whatever
// was typed); and the choice says what was checked (note).
func JudgeReconcile(d Choice, note, requestStatus string, approvals int) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	switch {
	case d != Applied && d != Republish && d != NotApplied:
		return v.plain(Block, CheckDecision, "choose applied, not applied (republish) or not applied (leave it)")
	case d == Republish:
		if r := JudgeRepublish(requestStatus, approvals); r.Outcome != Go {
			return r
		}
	}
	if strings.TrimSpace(note) == "" {
		return v.plain(Block, CheckDecisionNote, "say what you checked in the target and what you found: auditors read it")
	}
	return v
}

// JudgeRepublish says whether an item that needs reconciliation may be
// settled "not applied, republish" (what the request page offers, and what
// JudgeReconcile lets through), when its request has status requestStatus
// and needed approvals distinct approvers to publish (PublishApprovals).
// It is pure. Not when that was two (TwoApprovers: manual, destructive):
// a republish is a fresh first publish, on the word of the one person who
// settles it, maybe days after the approvals and past their expiry; the
// two-person rule holds only if it takes a new request with two approvals
// of its own (the item is left, back in quarantine, and requested again).
// Nor once the request publishes nothing more (a cancel, a stop, a
// rejection). One approver's classes, and those that need none, republish.
func JudgeRepublish(requestStatus string, approvals int) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	switch {
	case requirementFor(approvals) == TwoApprovers:
		return v.plain(Block, CheckRepublishTwoApprovers, "republishing an item that needed two approvers takes a new request with two approvals of its own: leave it, then request it again")
	case requestStatus != "approved" && requestStatus != "running" && requestStatus != "done_with_problems":
		return v.plain(Block, CheckDecisionClosed, fmt.Sprintf("the request is %s and publishes nothing more: choose applied or not applied, or request a new replay",
			strings.ReplaceAll(requestStatus, "_", " ")))
	}
	return v
}

// PublishApprovals is how many distinct approvers a request of class,
// whose items were classed by union too, needed to publish: the most of
// what the rules asked of it when it was submitted (asked: Require's
// ApprovalsNeeded, under the policy it was approved under, raised by an
// edited payload or an item's error class), what its classes ask under
// table t now (t nil, or without the class: nothing), and the least the
// policy may ask of any of them (manual: two, whatever the table). The
// most, because it bounds what one person may do alone afterwards
// (JudgeRepublish): a reading that asks for more is never ignored.
func PublishApprovals(t *Table, class Class, union []Class, asked int) int {
	n := RecordedApprovals(class, union, asked)
	if t != nil {
		if k, ok := t.RequestKnobs(class, union); ok {
			n = max(n, k.Approvals)
		}
	}
	return n
}

// RecordedApprovals is how many distinct approvers a request of class,
// whose items were classed by union too, needed to publish by what cannot
// change after it was submitted: what the rules asked of it (asked, as
// recorded) and the least the policy may ask of its classes (manual: two).
// Unlike PublishApprovals it does not read the table now, which a new
// version raises and a rollback lowers again: a decision that must hold
// for good (whether an emergency stop of a request changes anything) is
// made on this one.
func RecordedApprovals(class Class, union []Class, asked int) int {
	n := asked
	for _, c := range append([]Class{class}, union...) {
		n = max(n, minApprovals(c))
	}
	return n
}

// MayEverRepublish says whether an item that needs reconciliation, of a
// request that needed approvals distinct approvers to publish, could be
// republished under some policy table: not when that was two
// (JudgeRepublish). With RecordedApprovals it is what no policy change
// can turn.
func MayEverRepublish(approvals int) bool {
	return requirementFor(approvals) != TwoApprovers
}

// TwoApproverFloor is what makes RecordedApprovals ask two approvers:
// approvals recorded of at least least, or any of classes (those whose
// floor alone asks two). For the SQL that selects by it (the requests an
// emergency stop ends), which must agree with MayEverRepublish.
func TwoApproverFloor() (least int, classes []Class) {
	least = 1
	for requirementFor(least) != TwoApprovers {
		least++
	}
	for _, c := range KnownClasses() {
		if requirementFor(minApprovals(c)) == TwoApprovers {
			classes = append(classes, c)
		}
	}
	return least, classes
}

// NeedReconciliation is how a count of n items that need reconciliation
// reads after its number: "1 needs reconciliation", "3 need
// reconciliation".
func NeedReconciliation(n int) string {
	if n == 1 {
		return "needs reconciliation"
	}
	return "need reconciliation"
}

// NotAppliedText is what every count calls the items a person settled
// "not applied, leave it": not "cancelled" (nobody dropped them), and
// their dead letters wait in quarantine again.
const NotAppliedText = "not applied (back in quarantine)"

// AppliedText is what every page calls an item a person settled
// "applied".
const AppliedText = "applied (found by a person)"
