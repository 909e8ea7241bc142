package replaypolicy

import (
	"testing"
	"time"

	"github.com/quarantine-console/quarantine"
)

// TestApprovalStands: whether someone who may be the actor (MayBeOne: each
// approver as recorded and as the directory has them now) gave an approval
// that still counts, and ApprovalLapsed, its counterpart for one that no
// longer does.
func TestApprovalStands(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	bobGH := quarantine.Actor{Issuer: "https://github.example", Subject: "bob-gh", Email: "bob-gh@example.org"}
	bobNow := bob
	bobNow.Email = bobGH.Email // bob's identity now holds the address of his second one
	for _, tc := range []struct {
		name           string
		approvals      []Approval
		actor          quarantine.Actor
		stands, lapsed bool
	}{
		{"None", nil, bob, false, false},
		{"SameIdentity", []Approval{approval(bob, time.Minute)}, bobElsewhere, true, false},
		{"SameMailbox", []Approval{approval(bob, time.Minute)}, quarantine.Actor{Issuer: "https://x.example", Subject: "b", Email: "BOB@example.com"}, true, false},
		{"AnotherIdentityNow", []Approval{{Approver: bob, ApproverNow: bobNow, At: testNow.Add(-time.Minute), IntentHash: testIntent}}, bobGH, true, false},
		{"AnotherIdentityAsRecordedOnly", []Approval{approval(bob, time.Minute)}, bobGH, false, false},
		{"Expired", []Approval{approval(bob, 30*time.Hour)}, bob, false, true},
		{"OtherIntent", []Approval{{Approver: bob, ApproverNow: bobNow, At: testNow.Add(-time.Minute), IntentHash: "00"}}, bobGH, false, true},
		{"Voided", []Approval{{Approver: bob, At: testNow.Add(-time.Minute), IntentHash: testIntent, Void: "lost the right"}}, bob, false, true},
		{"SomeoneElse", []Approval{approval(carol, time.Minute)}, bob, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := testRequest(tbl)
			req.RequestedAt = testNow.Add(-48 * time.Hour)
			req.Class, req.Approvals = SameOperation, tc.approvals
			if got := ApprovalStands(tbl, req, tc.actor, testNow); got != tc.stands {
				t.Errorf("ApprovalStands = %v, want %v", got, tc.stands)
			}
			if got := ApprovalLapsed(tbl, req, tc.actor, testNow); got != tc.lapsed {
				t.Errorf("ApprovalLapsed = %v, want %v", got, tc.lapsed)
			}
		})
	}
	if ApprovalStands(nil, testRequest(tbl), bob, testNow) {
		t.Error("no table: nothing counts")
	}
}
