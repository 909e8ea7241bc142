package replay

import (
	"fmt"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// ApprovalCount is a request's approvals so far and the approvals it needs,
// as every page and message says it ("1 of 2"). Ignored says, of each
// approval it was counted from (CountOf's as, in order), why that one does
// not count (a replaypolicy Ignored phrase: expired, for a different
// intent, by an approver who lost the right…; "" when it counts): the
// count's own verdicts, which a page lists beside each approval.
type ApprovalCount struct {
	Have, Needed int
	Ignored      []string
}

// String is the count as people read it.
func (c ApprovalCount) String() string { return fmt.Sprintf("%d of %d", c.Have, c.Needed) }

// CountOf is the approval count of req with its approvals as, by the rules
// (replaypolicy.CountApprovals, the count Require decides with): while it
// waits, the approvals that count now; once approved, those that counted
// when it was; once closed before approval, those that counted when it
// closed. Needed is what the rules asked of it (Request.ApprovalsNeeded);
// of a draft, which the rules judge only when it is submitted, what its
// class asks (an edit or an item's error class may ask more then). Ignored
// judges each of as at the same moment by the same rule.
func CountOf(t *replaypolicy.Table, req Request, as []Approval, now time.Time) ApprovalCount {
	at := now
	switch {
	case req.ApprovedAt != nil:
		at = *req.ApprovedAt
	case req.FinishedAt != nil && req.FinishedAt.Before(now):
		at = *req.FinishedAt
	}
	needed := req.ApprovalsNeeded
	if req.Status == StatusDraft && t != nil {
		// Not judged yet (it is when submitted): what its class asks.
		if k, ok := t.Knobs(req.Class); ok {
			needed = k.Approvals
		}
	}
	have, ignored := replaypolicy.JudgeApprovals(t, policyRequest(req, as), at)
	return ApprovalCount{Have: have, Needed: needed, Ignored: ignored}
}

// ItemCounts are a request's items as every page counts them (the replays
// list, the approvals list, the emergency stop page and the request's own
// progress), each item once, by what became of it (DESIGN's item
// outcomes). ToGo are the items that may still be published: a job not
// yet ended (waiting or deferred), or, while
// the request is open, an item that has no job because it is not approved
// yet (Unapproved, counted in ToGo too). NotRun are the items that have no
// job and never will: the request ended (rejected, cancelled, void) before
// it ran. Unknown are the items retried after a publish that got no
// PubAck: it may have landed, so they are never counted to go as if
// nothing of them had been sent (invariant 13; review round 43: the
// emergency stop page and the replays list said "to go").
type ItemCounts struct {
	Total                                    int
	Replayed, ToGo, Unknown, Unapproved      int
	Skipped                                  int
	Suppressed, Blocked, NeedsReconciliation int
	Cancelled, NotApplied, NotRun            int
	Applied                                  int // settled "applied" by a person
}

// CountItems counts the items of req, whose jobs and left-out items came
// to p.
func CountItems(req Request, p Progress) ItemCounts {
	rest := max(0, req.ItemCount+req.SkippedCount-p.Total()) // no job, and not left out
	if req.Status.Open() {
		return itemCounts(p, rest, 0) // not approved yet
	}
	return itemCounts(p, 0, rest)
}

// itemCounts are the items of requests whose jobs and left-out items came
// to p, and of which toGo more have no job yet (their request is open) and
// notRun never will (it ended).
func itemCounts(p Progress, toGo, notRun int) ItemCounts {
	return ItemCounts{
		Total:    p.Total() + toGo + notRun,
		Replayed: p.Replayed, ToGo: p.Pending + p.Deferred + toGo, Unknown: p.Unknown, Unapproved: toGo, Skipped: p.Skipped + p.LeftOutSkipped,
		Suppressed: p.Suppressed, Blocked: p.Blocked + p.LeftOutBlocked, NeedsReconciliation: p.NeedsReconciliation,
		Cancelled: p.Cancelled, NotApplied: p.NotApplied, NotRun: notRun, Applied: p.Applied,
	}
}

// openStatuses are the statuses of an open request (Status.Open).
func openStatuses() []string {
	var out []string
	for _, st := range requestStatuses {
		if st.Open() {
			out = append(out, string(st))
		}
	}
	return out
}

// String is the counts as the pages write them: replayed always, then each
// other outcome that some item came to, "0 replayed · 2 to go · 1 blocked".
func (c ItemCounts) String() string {
	parts := []string{fmt.Sprintf("%d replayed", c.Replayed)}
	for _, o := range []struct {
		n    int
		what string
	}{
		{c.Applied, replaypolicy.AppliedText}, {c.ToGo, "to go"}, {c.Unknown, UnknownText}, {c.Skipped, "skipped"}, {c.Suppressed, "suppressed as a duplicate"}, {c.Blocked, "blocked"},
		{c.NeedsReconciliation, replaypolicy.NeedReconciliation(c.NeedsReconciliation)}, {c.Cancelled, "cancelled"},
		{c.NotApplied, replaypolicy.NotAppliedText}, {c.NotRun, NotRunText},
	} {
		if o.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", o.n, o.what))
		}
	}
	return strings.Join(parts, " · ")
}

// UnknownText is what every page calls an item retried after a publish
// that got no PubAck (views.OutcomeText of "unknown").
const UnknownText = "retrying (no PubAck)"

// NotRunText is what every page calls an item that never ran because its
// request ended first.
const NotRunText = "not run"
