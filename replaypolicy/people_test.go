package replaypolicy

import (
	"testing"

	"github.com/quarantine-console/quarantine"
)

// TestSamePerson: separation of duties matches the same identity or the
// same mailbox, verified or not (whoever controls a second account controls
// its verification); what only the requester may do matches the exact
// identity only.
func TestSamePerson(t *testing.T) {
	t.Parallel()
	ann := quarantine.Actor{Issuer: "https://idp.example", Subject: "ann", Email: "ann@example.com", EmailVerified: true}
	other := func(email string, verified bool) quarantine.Actor {
		return quarantine.Actor{Issuer: "https://other-idp.example", Subject: "a-2", Email: email, EmailVerified: verified}
	}
	annUnverified := ann
	annUnverified.EmailVerified = false
	tests := []struct {
		name         string
		a, b         quarantine.Actor
		samePerson   bool // SamePerson: approving, counting approvers
		sameIdentity bool // requesterOnly: cancel, submit, edit
	}{
		{"SameIdentity", ann, ann, true, true},
		{"SameIdentityOtherEmail", ann, quarantine.Actor{Issuer: ann.Issuer, Subject: ann.Subject, Email: "a.n@example.org"}, true, true},
		{"BothVerified", ann, other("ann@example.com", true), true, false},
		{"CaseAndSpace", ann, other("  ANN@Example.COM ", true), true, false},
		{"SecondUnverified", ann, other("ann@example.com", false), true, false},
		{"FirstUnverified", other("ann@example.com", false), ann, true, false},
		{"BothUnverified", annUnverified, other("ann@example.com", false), true, false},
		{"PlusTag", ann, other("ann+approver@example.com", true), true, false},
		{"PlusTagUnverified", other("ann+x@example.com", false), annUnverified, true, false},
		{"OtherMailbox", ann, other("anne@example.com", true), false, false},
		{"OtherDomain", ann, other("ann@example.org", true), false, false},
		{"SameSubjectOtherIssuer", ann, quarantine.Actor{Issuer: "https://other-idp.example", Subject: "ann", Email: "x@example.com"}, false, false},
		{"BothNoEmail", quarantine.Actor{Issuer: "i", Subject: "a"}, quarantine.Actor{Issuer: "i", Subject: "b"}, false, false},
		{"BlankEmails", quarantine.Actor{Issuer: "i", Subject: "a", Email: " "}, quarantine.Actor{Issuer: "i", Subject: "b", Email: ""}, false, false},
		{"LeadingPlusIsAMailbox", other("+x@example.com", true), ann, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SamePerson(tt.a, tt.b); got != tt.samePerson {
				t.Errorf("SamePerson = %v, want %v", got, tt.samePerson)
			}
			if SamePerson(tt.b, tt.a) != SamePerson(tt.a, tt.b) {
				t.Error("SamePerson is not symmetric")
			}
			req := Request{Class: SameOperation, Requester: tt.a}
			if blocked := MayApprove(req, tt.b).Outcome != Go; blocked != tt.samePerson {
				t.Errorf("MayApprove blocked = %v, want %v", blocked, tt.samePerson)
			}
			if allowed := MayCancel(tt.a, tt.b).Outcome == Go; allowed != tt.sameIdentity {
				t.Errorf("MayCancel allowed = %v, want %v: only the identity itself", allowed, tt.sameIdentity)
			}
			if allowed := MaySubmit(tt.a, tt.b).Outcome == Go; allowed != tt.sameIdentity {
				t.Errorf("MaySubmit allowed = %v, want %v", allowed, tt.sameIdentity)
			}
		})
	}
}
