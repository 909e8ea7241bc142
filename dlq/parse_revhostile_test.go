package dlq

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Review (rev-hostile): CleanText folds a run of invalid bytes into one
// U+FFFD, so subjects whose tenant tokens differ only in their invalid
// bytes (and a tenant that is literally "\uFFFD") land in one tenant:
// whoever may publish to dlq.<tenant-with-\xfe>.> writes into the
// console tenant of dlq.<tenant-with-\xff>.> and of dlq.<tenant-with-U+FFFD>.>.
// Decided (fix-hostile): such a token, and a wildcard (* is the console's
// "every tenant"), names no tenant at all: the dead letter is stored under
// UnknownTenant, flagged invalid:tenant with the token escaped, so no
// tenant's console holds another's; a valid token is still its tenant.
func TestReviewInvalidTenantTokensStayApart(t *testing.T) {
	now := time.Now()
	for i, c := range []struct{ subject, escaped string }{
		{"dlq.acme\xff.x", `"acme\xff"`},
		{"dlq.acme\xfe\xfd.x", `"acme\xfe\xfd"`},
		{"dlq.acme\uFFFD.x", `"acme�"`},
		{"dlq.acme\x00.x", `"acme\x00"`},
		{"dlq.*.x", `"*"`},
		{"dlq.>", `">"`},
	} {
		r := ParseDLQ("dlq", Received{Subject: c.subject, Stream: "DLQ", Seq: uint64(i + 1), Time: now})
		if r.Tenant != UnknownTenant || !slices.Contains(r.Flags, "invalid:tenant") {
			t.Errorf("subject %q: tenant %q, flags %v; want %q flagged invalid:tenant", c.subject, r.Tenant, r.Flags, UnknownTenant)
		}
		if !slices.ContainsFunc(r.MalformedReasons, func(s string) bool { return strings.Contains(s, c.escaped) }) {
			t.Errorf("subject %q: no reason names the token %s: %q", c.subject, c.escaped, r.MalformedReasons)
		}
		if r.Subject != CleanText(c.subject) {
			t.Errorf("subject %q stored as %q", c.subject, r.Subject)
		}
	}
	r := ParseDLQ("dlq", Received{Subject: "dlq.acme.x", Stream: "DLQ", Seq: 9, Time: now})
	if r.Tenant != "acme" || slices.Contains(r.Flags, "invalid:tenant") {
		t.Errorf("a valid token: tenant %q, flags %v", r.Tenant, r.Flags)
	}
	for _, s := range []string{"dlq.acme.*", "dlq.acme.orders.>"} {
		r := ParseDLQ("dlq", Received{Subject: s, Stream: "DLQ", Seq: 10, Time: now})
		if r.Tenant != "acme" || !slices.Contains(r.Flags, "invalid:item_type") {
			t.Errorf("subject %q: tenant %q, flags %v; want acme flagged invalid:item_type", s, r.Tenant, r.Flags)
		}
	}
}

// Review (rev-hostile): a contract header sent twice under one spelling is
// flagged duplicate:<field>; sent once as the contract spells it and once
// under another case with a conflicting value, the other is dropped from
// what is read without a flag (the raw headers keep both).
func TestReviewConflictingCaseVariantFlagged(t *testing.T) {
	r := ParseDLQ("dlq", Received{Subject: "dlq.acme.x", Stream: "DLQ", Seq: 1, Time: time.Now(), Header: map[string][]string{
		HeaderOriginalSubject: {"app.acme.x"}, HeaderPrincipal: {"alice"}, "dlq-principal": {"root"},
	}})
	if r.Principal != "alice" {
		t.Fatalf("principal %q", r.Principal)
	}
	if len(r.Flags) == 0 {
		t.Errorf("Dlq-Principal %q and dlq-principal %q disagree: nothing flagged", "alice", "root")
	}
}
