package replaypolicy

// Review (rev-govern): one person is one person (invariant 14).

import (
	"testing"

	"github.com/quarantine-console/quarantine"
)

// TestSamePersonOneMailboxTwoSpellings: SamePerson folds case and a
// "+tag" because they reach the same mailbox, so that one person's second
// account does not approve their own request or count as a second
// approver. A domain written as its Unicode U-label and as its ASCII
// A-label (punycode) is, by IDNA, the same domain: mail to both reaches
// one mailbox, so an identity provider that verifies by sending mail
// verifies both, and one that keeps emails unique by their text lets both
// exist. The same holds for a domain in full-width letters, which IDNA
// maps to ASCII. SamePerson treats each pair as two people: the person
// behind both approves their own request, or counts twice for manual.
func TestSamePersonOneMailboxTwoSpellings(t *testing.T) {
	t.Parallel()
	id := func(sub, email string) quarantine.Actor {
		return quarantine.Actor{Issuer: "https://idp.example", Subject: sub, Email: email, EmailVerified: true}
	}
	tests := []struct {
		name string
		a, b string
	}{
		{"ULabelAndALabel", "ann@exämple.com", "ann@xn--exmple-cua.com"},
		{"FullWidthDomain", "ann@ｅxample.com", "ann@example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requester, approver := id("ann-1", tt.a), id("ann-2", tt.b)
			if !SamePerson(requester, approver) {
				t.Errorf("SamePerson(%q, %q) = false: one mailbox, two people", tt.a, tt.b)
			}
			if MayApprove(Request{Class: Manual, Requester: requester}, approver).Outcome == Go {
				t.Errorf("the owner of %q approves the request they made as %q", tt.b, tt.a)
			}
		})
	}
}
