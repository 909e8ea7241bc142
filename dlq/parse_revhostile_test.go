package dlq

import (
	"strings"
	"testing"
	"time"
)

// Review (rev-hostile): how long ParseDLQ takes on pathological values a
// header can carry (any size when read from a block): a stack of 100k
// frames in 1 MB, an error of quotes, thousands of invalid values.
func TestReviewPathologicalParseCost(t *testing.T) {
	var frames strings.Builder
	for i := 0; frames.Len() < 1<<20; i++ {
		frames.WriteString("goroutine 1 [running]:\\n")
	}
	cases := map[string]map[string][]string{
		"stack 1MB goroutine lines": {HeaderStack: {frames.String()}},
		"error 1MB quotes":          {HeaderError: {strings.Repeat(`'"`, 1<<19)}},
		"error 1MB open quotes":     {HeaderError: {strings.Repeat(`'a`, 1<<19)}},
		"error 1MB backslashes":     {HeaderError: {strings.Repeat(`\`, 1<<20)}},
		"stack 60k invalid values":  {HeaderStack: strings.Split(strings.Repeat("\xff,", 60000), ",")},
		"60k header names": func() map[string][]string {
			h := map[string][]string{}
			for i := range 60000 {
				h[strings.Repeat("x", 1)+string(rune('a'+i%26))+strings.Repeat("y", i%50)+string(rune(i))] = []string{"v"}
			}
			return h
		}(),
		"60k dlq- case variants": func() map[string][]string {
			h := map[string][]string{}
			for i := range 60000 {
				h["dlq-error"+strings.Repeat(" ", i%3)+string(rune(0x100+i))] = []string{"v"}
			}
			return h
		}(),
	}
	for name, h := range cases {
		start := time.Now()
		r := ParseDLQ("dlq", Received{Subject: "dlq.acme.x", Header: h, Stream: "DLQ", Seq: 1, Time: time.Now()})
		took := time.Since(start)
		t.Logf("%s: %v, %d reasons, fingerprint %s", name, took, len(r.MalformedReasons), r.Fingerprint)
		if took > 2*time.Second {
			t.Errorf("%s took %v", name, took)
		}
	}
}

// Review (rev-hostile): CleanText folds a run of invalid bytes into one
// U+FFFD, so subjects whose tenant tokens differ only in their invalid
// bytes (and a tenant that is literally "\uFFFD") land in one tenant:
// whoever may publish to dlq.<tenant-with-\xfe>.> writes into the
// console tenant of dlq.<tenant-with-\xff>.> and of dlq.<tenant-with-U+FFFD>.>.
func TestReviewInvalidTenantTokensStayApart(t *testing.T) {
	now := time.Now()
	got := map[string]string{}
	for i, s := range []string{"dlq.acme\xff.x", "dlq.acme\xfe\xfd.x", "dlq.acme\uFFFD.x", "dlq.acme\x00.x"} {
		r := ParseDLQ("dlq", Received{Subject: s, Stream: "DLQ", Seq: uint64(i + 1), Time: now})
		if prev, ok := got[r.Tenant]; ok {
			t.Errorf("subjects %q and %q share the console tenant %q", prev, s, r.Tenant)
		}
		got[r.Tenant] = s
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
