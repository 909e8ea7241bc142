package replay

import (
	"fmt"
	"time"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// ApprovalCount is a request's approvals so far and the approvals it needs,
// as every page and message says it ("1 of 2").
type ApprovalCount struct {
	Have, Needed int
}

// String is the count as people read it.
func (c ApprovalCount) String() string { return fmt.Sprintf("%d of %d", c.Have, c.Needed) }

// CountOf is the approval count of req with its approvals as, by the rules
// (replaypolicy.CountApprovals, the count Require decides with): while it
// waits, the approvals that count now; once approved, those that counted
// when it was; once closed before approval, those that counted when it
// closed. Needed is what the rules asked of it (Request.ApprovalsNeeded).
func CountOf(t *replaypolicy.Table, req Request, as []Approval, now time.Time) ApprovalCount {
	at := now
	switch {
	case req.ApprovedAt != nil:
		at = *req.ApprovedAt
	case req.FinishedAt != nil && req.FinishedAt.Before(now):
		at = *req.FinishedAt
	}
	return ApprovalCount{Have: replaypolicy.CountApprovals(t, policyRequest(req, as), at), Needed: req.ApprovalsNeeded}
}
