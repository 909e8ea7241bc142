package replaypolicy

import (
	"strings"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine"
)

// TestFixReplay11RunShortOfApprovalsSaysWhy: a request approved with fewer
// approvals than it records needing, the people as the request recorded
// them included (no email change explains it: it was approved on its
// requester's word while a fix marker of theirs asked for an approver), is
// blocked at execution naming the requester's fix marker, not two
// approvers sharing an email; approvers who became one person still say
// that.
func TestFixReplay11RunShortOfApprovalsSaysWhy(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	run := Run{Tenant: "acme", Class: Manual, Status: "approved", PolicyVersion: tbl.Version(), ApprovedAt: testNow.Add(-time.Minute),
		Requester: alice, ApprovalsNeeded: 1, Authority: &Authority{RequesterMay: true}}
	v := JudgeRun(tbl, run, testNow)
	if v.Outcome != Block || v.Check != CheckOwnRequest {
		t.Fatalf("approved with none of the one approval it needs = %v, want blocked", v)
	}
	if !strings.Contains(v.Reason, "fix marker its requester "+alice.Attribution()+" recorded") || strings.Contains(v.Reason, "share an email") {
		t.Errorf("the reason names no fix marker, or blames an email: %q", v.Reason)
	}

	carol := quarantine.Actor{Issuer: "https://other.example", Subject: "u-carol", Email: "carol@example.com"}
	carolNow := carol
	carolNow.Email = "BOB@example.com"
	run.ApprovalsNeeded = 2
	run.Authority.Approvers = []Standing{{Who: bob, May: true}, {Who: carol, Now: carolNow, May: true}}
	v = JudgeRun(tbl, run, testNow)
	if v.Outcome != Block || !strings.Contains(v.Reason, "two approvers' accounts share an email") {
		t.Errorf("two approvers who are one person now = %v, want the shared email named", v)
	}
	if run.Authority.Approvers[1].Now != carolNow {
		t.Errorf("judging changed the run's people")
	}
}
