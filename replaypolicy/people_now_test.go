package replaypolicy

import (
	"testing"
	"time"

	"github.com/quarantine-console/quarantine"
)

// TestSeparationWithPeopleAsTheyAreNow: separation of duties compares the
// people of a request as it recorded them and as the directory has them
// now. A requester whose identity took the approver's email since is that
// approver's person: MayApprove blocks, their approval does not count, and
// JudgeRun blocks an approval given before the change; two approvers who
// became one count once, at approval and at execution.
func TestSeparationWithPeopleAsTheyAreNow(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	aliceNow := alice
	aliceNow.Email, aliceNow.EmailVerified = "bob@example.com", true
	carol := quarantine.Actor{Issuer: "https://other.example", Subject: "u-carol", Email: "carol@example.com"}
	carolNow := carol
	carolNow.Email = "BOB@example.com"

	req := testRequest(tbl)
	if v := MayApprove(req, bob, quarantine.Actor{}); v.Outcome != Go {
		t.Fatalf("bob is not the requester as recorded: %v", v)
	}
	req.RequesterNow = aliceNow
	if v := MayApprove(req, bob, quarantine.Actor{}); v.Outcome != Block || v.Check != CheckOwnRequest {
		t.Errorf("MayApprove(bob) with the requester holding his email now = %v, want blocked as own request", v)
	}
	req.Approvals = []Approval{approval(bob, time.Minute)}
	if n := CountApprovals(tbl, req, testNow); n != 0 {
		t.Errorf("an approval by someone the requester may be now counts: %d", n)
	}

	two := testRequest(tbl)
	two.Class = Manual
	two.Approvals = []Approval{approval(bob, 2*time.Minute), approval(carol, time.Minute)}
	if n := CountApprovals(tbl, two, testNow); n != 2 {
		t.Fatalf("two people approved: %d", n)
	}
	two.Approvals[1].ApproverNow = carolNow
	if n := CountApprovals(tbl, two, testNow); n != 1 {
		t.Errorf("two approvers who are one person now count %d times", n)
	}

	run := Run{Tenant: "acme", Class: Manual, Status: "approved", PolicyVersion: tbl.Version(), ApprovedAt: testNow.Add(-time.Minute),
		Requester: alice, ApprovalsNeeded: 2, Authority: &Authority{RequesterMay: true,
			Approvers: []Standing{{Who: bob, May: true}, {Who: carol, May: true}}}}
	if v := JudgeRun(tbl, run, testNow); v.Outcome != Go {
		t.Fatalf("two people approved, nothing changed: %v", v)
	}
	run.Authority.Approvers[1].Now = carolNow
	if v := JudgeRun(tbl, run, testNow); v.Outcome != Block || v.Check != CheckOwnRequest {
		t.Errorf("JudgeRun with two approvers now one person = %v, want blocked", v)
	}
	run.Authority.Approvers[1].Now = quarantine.Actor{}
	run.Authority.RequesterNow = aliceNow
	if v := JudgeRun(tbl, run, testNow); v.Outcome != Block || v.Check != CheckOwnRequest {
		t.Errorf("JudgeRun with the requester holding an approver's email now = %v, want blocked", v)
	}
	run.ApprovalsNeeded = 1
	run.Authority.Approvers = run.Authority.Approvers[1:]
	if v := JudgeRun(tbl, run, testNow); v.Outcome != Go {
		t.Errorf("one approver who is not the requester, one needed: %v", v)
	}
}
