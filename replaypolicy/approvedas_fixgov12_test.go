package replaypolicy

import (
	"strings"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine"
)

// TestFixGov12ApprovedAsIsOnePerson: an approver is the person behind
// every address their identity approved the request under
// (Request.KnownAs), wherever the rules judge people: the count, the
// approval that still stands, the actor's own request, and the worker's
// count at execution. bob approved as bob@example.com, renewed under
// bob-new@example.com; bobGH holds bob@example.com.
func TestFixGov12ApprovedAsIsOnePerson(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	bobNew := bob
	bobNew.Email = "bob-new@example.com"
	bobGH := quarantine.Actor{Issuer: "https://github.example", Subject: "bob-gh", Email: bob.Email}
	req := testRequest(tbl)
	req.Class = Manual
	req.Approvals = []Approval{
		{Approver: bobNew, ApproverNow: bobNew, At: testNow.Add(-time.Minute), IntentHash: testIntent},
		{Approver: bobGH, ApproverNow: bobGH, At: testNow.Add(-2 * time.Minute), IntentHash: testIntent},
	}
	without := req
	req.KnownAs = []quarantine.Actor{bob, bobNew, bobGH}

	if n := CountApprovals(tbl, without, testNow); n != 2 {
		t.Fatalf("precondition: without the addresses approved under, %d people, want 2", n)
	}
	n, ignored := JudgeApprovals(tbl, req, testNow)
	if n != 1 || ignored[1] != IgnoredAgain {
		t.Errorf("one person under two identities counts %d times (%q), want once, the second as %q", n, ignored, IgnoredAgain)
	}
	one := req
	one.Approvals = req.Approvals[:1]
	if !ApprovalStands(tbl, one, bobGH, testNow) {
		t.Error("bob's renewed approval does not stand for bobGH, who holds the address bob approved under before")
	}
	one.Approvals = req.Approvals[1:]
	if !ApprovalStands(tbl, one, bobNew, testNow) {
		t.Error("bobGH's approval does not stand for bob, whose identity approved under bobGH's address")
	}

	// The worker, with each approver as the directory has them now.
	run := Run{Tenant: "acme", Class: Manual, Status: "approved", PolicyVersion: tbl.Version(), ApprovedAt: testNow.Add(-time.Second),
		Requester: alice, IntentHash: testIntent, RequestedAt: req.RequestedAt, Approvals: req.Approvals, ApprovalsNeeded: 2,
		Authority: &Authority{RequesterMay: true, Approvers: []Standing{{Who: bobNew, Now: bobNew, May: true}, {Who: bobGH, Now: bobGH, May: true}}}}
	if v := JudgeRun(tbl, run, testNow); v.Outcome != Go {
		t.Fatalf("precondition: without the addresses approved under, two people: %v", v)
	}
	run.KnownAs = req.KnownAs
	v := JudgeRun(tbl, run, testNow)
	if v.Outcome != Block || v.Check != CheckOwnRequest || !strings.Contains(v.Reason, "share an email") {
		t.Errorf("the worker publishes on one person's two approvals: %v", v)
	}

	// An approver whose identity approved under the requester's address.
	own := testRequest(tbl)
	own.KnownAs = []quarantine.Actor{{Issuer: bob.Issuer, Subject: bob.Subject, Email: alice.Email}}
	if MayApprove(own, bob, quarantine.Actor{}).Outcome != Block {
		t.Error("bob, who approved this request under alice's address, may approve alice's request")
	}
}

// TestFixGov12MayReconcileAsTheDirectoryHasThemNow: a settler whose
// identity, as the directory has it now, holds the requester's address is
// refused, though their session began under another (finding 3).
func TestFixGov12MayReconcileAsTheDirectoryHasThemNow(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	req := testRequest(tbl)
	bobNow := bob
	bobNow.Email = "ALICE@example.com"
	if v := MayReconcile(req, bob, quarantine.Actor{}); v.Outcome != Go {
		t.Fatalf("precondition: bob as signed in is not alice: %v", v)
	}
	if v := MayReconcile(req, bob, bobNow); v.Outcome != Block || v.Check != CheckOwnRequest {
		t.Errorf("bob, whose identity now holds alice's address, may settle her request: %v", v)
	}
}
