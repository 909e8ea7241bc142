package replaypolicy

import (
	"testing"
	"time"

	"github.com/quarantine-console/quarantine"
)

// TestFixGov13RequesterIsEveryAddressKnown: the requester is the person
// behind every address the console has seen their identity with
// (Request.KnownAs), not only as the request recorded them and as the
// directory has them now, wherever the rules compare them: approving,
// settling, counting approvals, a fix marker's recorder, and the worker's
// count at execution. alice drafted as alice@example.com, submitted as
// alice-b@example.com, and is alice-c@example.com now; aliceGH, a second
// identity of hers, holds alice-b@example.com.
func TestFixGov13RequesterIsEveryAddressKnown(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	aliceB, aliceC := alice, alice
	aliceB.Email, aliceC.Email = "alice-b@example.com", "alice-c@example.com"
	aliceGH := quarantine.Actor{Issuer: "https://github.example", Subject: "alice-gh", Email: aliceB.Email}
	req := testRequest(tbl)
	req.Class, req.RequesterNow = Manual, aliceC
	req.Approvals = []Approval{
		{Approver: aliceGH, ApproverNow: aliceGH, At: testNow.Add(-2 * time.Minute), IntentHash: testIntent},
		{Approver: bob, ApproverNow: bob, At: testNow.Add(-time.Minute), IntentHash: testIntent},
	}
	without := req
	req.KnownAs = []quarantine.Actor{alice, aliceB, aliceC}

	if MayApprove(without, aliceGH, quarantine.Actor{}).Outcome != Go || CountApprovals(tbl, without, testNow) != 2 {
		t.Fatal("precondition: without the addresses known, aliceGH is someone else")
	}
	if v := MayApprove(req, aliceGH, quarantine.Actor{}); v.Outcome != Block || v.Check != CheckOwnRequest {
		t.Errorf("aliceGH, holding the address alice submitted under, may approve her request: %v", v)
	}
	if v := MayReconcile(req, aliceGH, quarantine.Actor{}); v.Outcome != Block || v.Check != CheckOwnRequest {
		t.Errorf("aliceGH may settle an item of alice's request: %v", v)
	}
	if n, ignored := JudgeApprovals(tbl, req, testNow); n != 1 || ignored[0] != IgnoredRequester {
		t.Errorf("the approval of aliceGH counts (%d, %q), want it ignored as %q", n, ignored, IgnoredRequester)
	}

	// The actor's own addresses: bobGH was once seen as alice-b@example.com
	// and approves as bob-gh@example.com.
	bobGH := quarantine.Actor{Issuer: "https://github.example", Subject: "bob-gh", Email: "bob-gh@example.com"}
	seenBefore := without
	seenBefore.KnownAs = []quarantine.Actor{alice, aliceB, {Issuer: bobGH.Issuer, Subject: bobGH.Subject, Email: aliceB.Email}}
	if v := MayApprove(seenBefore, bobGH, quarantine.Actor{}); v.Outcome != Block {
		t.Errorf("an actor whose identity was seen with an address the requester's identity was seen with may approve: %v", v)
	}

	// A fix marker recorded by aliceGH: the requester's word.
	dead := testNow.Add(-time.Hour)
	item := testItem("search.x")
	item.ErrorClass, item.DeadLetteredAt, item.FixedAt, item.FixRef, item.FixRecordedBy = ErrSchemaInvalid, dead, dead.Add(time.Minute), "v9", aliceGH
	if FixedByRequester(tbl, item, nil, alice, aliceC) {
		t.Fatal("precondition: without the addresses known, the fix is someone else's")
	}
	if !FixedByRequester(tbl, item, req.KnownAs, alice, aliceC) {
		t.Error("a fix recorded by aliceGH, holding an address alice submitted under, is not the requester's")
	}
	// ... and by an identity once seen with the requester's address.
	item.FixRecordedBy = bobGH
	item.FixRecordedByKnownAs = []quarantine.Actor{{Issuer: bobGH.Issuer, Subject: bobGH.Subject, Email: alice.Email}}
	if !FixedByRequester(tbl, item, nil, alice, quarantine.Actor{}) {
		t.Error("a fix recorded by an identity once seen with the requester's address is not the requester's")
	}
	item.FixRecordedBy, item.FixRecordedByKnownAs = aliceGH, nil
	item.Requester, item.RequesterNow, item.KnownAs = alice, aliceC, req.KnownAs
	item.Status, item.Request, item.HeldBy = "replaying", 7, 7
	if v := JudgeItem(tbl, item, AtExecution); v.Outcome != Block || v.Check != CheckNeedsFix {
		t.Errorf("execution, a fix recorded by the requester's other identity under an address she submitted under: %v", v)
	}

	// The worker.
	run := Run{Tenant: "acme", Class: Manual, Status: "approved", PolicyVersion: tbl.Version(), ApprovedAt: testNow.Add(-time.Second),
		Requester: alice, IntentHash: testIntent, RequestedAt: req.RequestedAt, Approvals: req.Approvals, ApprovalsNeeded: 2,
		Authority: &Authority{RequesterMay: true, RequesterNow: aliceC,
			Approvers: []Standing{{Who: aliceGH, Now: aliceGH, May: true}, {Who: bob, Now: bob, May: true}}}}
	if v := JudgeRun(tbl, run, testNow); v.Outcome != Go {
		t.Fatalf("precondition: without the addresses known, two people besides the requester: %v", v)
	}
	run.KnownAs = req.KnownAs
	if v := JudgeRun(tbl, run, testNow); v.Outcome != Block || v.Check != CheckOwnRequest {
		t.Errorf("the worker publishes with the requester's second identity as one of two approvers: %v", v)
	}
	if n := OthersApproved(run); n != 1 {
		t.Errorf("OthersApproved = %d, want 1", n)
	}
}

// TestFixGov13PersonLinkedThroughAThirdAccount: one person with three
// accounts: bob (bob@example.com), bobMid, seen with bob@example.com and
// then bob-mid@example.com, and bobGH (bob-mid@example.com). bobMid's
// approval lapsed; bob's and bobGH's share no address, yet bobMid links
// them: one person, whose two approvals count once, here and at
// execution.
func TestFixGov13PersonLinkedThroughAThirdAccount(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	bobMid := quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "bob-mid", Email: "bob-mid@example.com"}
	bobGH := quarantine.Actor{Issuer: "https://github.example", Subject: "bob-gh", Email: bobMid.Email}
	req := testRequest(tbl)
	req.Class = Manual
	req.Approvals = []Approval{
		{Approver: bob, ApproverNow: bob, At: testNow.Add(-time.Minute), IntentHash: testIntent},
		{Approver: bobMid, ApproverNow: bobMid, At: testNow.Add(-48 * time.Hour), IntentHash: testIntent}, // lapsed
		{Approver: bobGH, ApproverNow: bobGH, At: testNow.Add(-2 * time.Minute), IntentHash: testIntent},
	}
	req.KnownAs = []quarantine.Actor{bob, {Issuer: bobMid.Issuer, Subject: bobMid.Subject, Email: bob.Email}, bobMid, bobGH}
	n, ignored := JudgeApprovals(tbl, req, testNow)
	if n != 1 || ignored[2] != IgnoredAgain {
		t.Errorf("one person under three accounts counts %d times (%q), want once", n, ignored)
	}
	one := req
	one.Approvals = req.Approvals[:1]
	if !ApprovalStands(tbl, one, bobGH, testNow) {
		t.Error("bob's approval does not stand for bobGH, linked to him through bobMid")
	}
	run := Run{Tenant: "acme", Class: Manual, Status: "approved", PolicyVersion: tbl.Version(), ApprovedAt: testNow.Add(-time.Second),
		Requester: alice, IntentHash: testIntent, RequestedAt: req.RequestedAt, Approvals: req.Approvals, ApprovalsNeeded: 2, KnownAs: req.KnownAs,
		Authority: &Authority{RequesterMay: true, Approvers: []Standing{{Who: bob, Now: bob, May: true}, {Who: bobGH, Now: bobGH, May: true}}}}
	if v := JudgeRun(tbl, run, testNow); v.Outcome != Block || v.Check != CheckOwnRequest {
		t.Errorf("the worker publishes on one person's two approvals: %v", v)
	}
}
