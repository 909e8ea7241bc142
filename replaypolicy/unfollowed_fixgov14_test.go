package replaypolicy

import (
	"testing"
	"time"

	"github.com/quarantine-console/quarantine"
)

// TestFixGov14UnfollowedIsAnyone: names read up to the walk's bound end
// with Unfollowed; who else the request's people are is then not known,
// and the rules never take that for "someone else": nobody may approve
// the request, two approvers count once, and the worker publishes
// nothing. Without it the same request is judged as before.
func TestFixGov14UnfollowedIsAnyone(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	carol := quarantine.Actor{Issuer: "https://idp.example", Subject: "u-carol", Email: "carol@example.com"}
	req := testRequest(tbl)
	req.Class = Manual
	req.Approvals = []Approval{
		{Approver: bob, ApproverNow: bob, At: testNow.Add(-time.Minute), IntentHash: testIntent},
		{Approver: carol, ApproverNow: carol, At: testNow.Add(-2 * time.Minute), IntentHash: testIntent},
	}
	run := Run{Tenant: "acme", Class: Manual, Status: "approved", PolicyVersion: tbl.Version(), ApprovedAt: testNow.Add(-time.Second),
		Requester: alice, IntentHash: testIntent, RequestedAt: req.RequestedAt, Approvals: req.Approvals, ApprovalsNeeded: 2,
		Authority: &Authority{RequesterMay: true, Approvers: []Standing{{Who: bob, Now: bob, May: true}, {Who: carol, Now: carol, May: true}}}}

	for _, cut := range []bool{false, true} {
		req.KnownAs, run.KnownAs = []quarantine.Actor{alice, bob, carol}, []quarantine.Actor{alice, bob, carol}
		if cut {
			req.KnownAs, run.KnownAs = append(req.KnownAs, Unfollowed), append(run.KnownAs, Unfollowed)
		}
		if got := MayApprove(req, bob, quarantine.Actor{}).Outcome == Go; got == cut {
			t.Errorf("cut=%v: bob may approve: %v", cut, got)
		}
		if n, _ := JudgeApprovals(tbl, req, testNow); (n == 2) == cut {
			t.Errorf("cut=%v: two people's approvals count %d times", cut, n)
		}
		if v := JudgeRun(tbl, run, testNow); (v.Outcome == Go) == cut {
			t.Errorf("cut=%v: the worker's verdict: %v", cut, v)
		}
	}
}
