package replaypolicy

// Review (rev-govern): one person is one person (invariant 14).

import (
	"os"
	"path/filepath"
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
// maps to ASCII, and for a local part quoted without need (RFC 5321:
// "ann"@example.com is ann@example.com). SamePerson treats each pair as two people: the person
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
		{"QuotedLocalPart", `"ann"@example.com`, "ann@example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requester, approver := id("ann-1", tt.a), id("ann-2", tt.b)
			if !SamePerson(requester, approver) {
				t.Errorf("SamePerson(%q, %q) = false: one mailbox, two people", tt.a, tt.b)
			}
			if MayApprove(Request{Class: Manual, Requester: requester}, approver, quarantine.Actor{}).Outcome == Go {
				t.Errorf("the owner of %q approves the request they made as %q", tt.b, tt.a)
			}
		})
	}
}

// TestUnclassifiedTargetDoesNotTakeTheItemTypesEasyClass: the producer
// writes both the item type (the DLQ subject) and the target
// (Dlq-Original-Subject). An item type no rule knows falls to manual ("a
// new item type must be classified here before it gets an easier
// replay"), but a target subject no rule knows tightens nothing, so a
// dead letter filed as search.index_update and aimed at a subject the
// policy never mentions (here app.acme.payments.capture, inside the
// tenant's allowlist app.{tenant}.>) is rebuildable under the shipped
// policy: one on-call replays it in bulk, no approver. The same item type
// aimed at app.acme.orders.refund is manual, because that subject has a
// rule; the difference is only whether the policy author foresaw the
// subject.
func TestUnclassifiedTargetDoesNotTakeTheItemTypesEasyClass(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "dev", "policy.toml"))
	if err != nil {
		t.Fatal(err)
	}
	tbl := mustParse(t, string(src))
	if got := tbl.ClassOf("search.index_update", "app.acme.orders.refund").Class; got != Manual {
		t.Fatalf("precondition: a subject with a rule tightens (got %s)", got)
	}
	if got := tbl.ClassOf("payments.capture", "app.acme.payments.capture").Class; got != Manual {
		t.Fatalf("precondition: an unknown item type is manual (got %s)", got)
	}
	if got := tbl.ClassOf("search.index_update", "app.acme.payments.capture").Class; got == Rebuildable {
		t.Errorf("a target no rule classifies takes the item type's class %s: the producer picks the class of any subject the policy did not foresee", got)
	}
}
