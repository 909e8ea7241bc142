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
			if blocked := MayApprove(req, tt.b, quarantine.Actor{}).Outcome != Go; blocked != tt.samePerson {
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

// TestSamePersonMailboxSpellings: SamePerson's mailbox reads one mailbox
// under its other spellings (a trailing root dot, Unicode case and width,
// quoted pairs, an ideographic full stop in the domain) and keeps apart
// spellings that may be two mailboxes (ß and ss, İ and i, dots in the local
// part, a quoted space, an A-label and the ASCII name it resembles).
func TestSamePersonMailboxSpellings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"TrailingDot", "ann@example.com.", "ann@example.com", true},
		{"UnicodeCase", "ÄNN@example.com", "änn@example.com", true},
		{"GreekFinalSigma", "ΣΑΣ@example.gr", "σας@example.gr", true},
		{"FullWidthLocalPart", "ＡＮＮ@example.com", "ann@example.com", true},
		{"IdeographicFullStop", "ann@example。com", "ann@example.com", true},
		{"UpperCaseALabel", "ann@XN--EXMPLE-CUA.COM", "ann@exämple.com", true},
		{"QuotedPair", `"a\ b"@example.com`, `"a b"@example.com`, true},
		{"QuotedPlusTag", `"ann+ops"@example.com`, "ann@example.com", true},
		{"UnderscoreDomain", "ann@Ex_Ample.com", "ann@ex_ample.com", true},
		{"SharpSInLocalPart", "straße@example.de", "strasse@example.de", false},
		{"SharpSInDomain", "ann@straße.de", "ann@strasse.de", false},
		{"DottedCapitalI", "İan@example.com", "ian@example.com", false},
		{"DotsInLocalPart", "ann.smith@example.com", "annsmith@example.com", false},
		{"QuotedSpace", `"ann smith"@example.com`, "annsmith@example.com", false},
		{"QuotedAt", `"ann@example.org"@example.com`, "ann@example.org", false},
		{"ALabelIsNotItsLookalike", "ann@xn--exmple-cua.com", "ann@example.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := quarantine.Actor{Issuer: "https://idp.example", Subject: "a", Email: tt.a}
			b := quarantine.Actor{Issuer: "https://idp.example", Subject: "b", Email: tt.b}
			if got := SamePerson(a, b); got != tt.same {
				t.Errorf("SamePerson(%q, %q) = %v, want %v (mailboxes %q and %q)", tt.a, tt.b, got, tt.same, Mailbox(tt.a), Mailbox(tt.b))
			}
		})
	}
}
