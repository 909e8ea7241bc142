package replaypolicy

import (
	"slices"
	"testing"
	"time"
)

// TestJudgeApprovals: each approval's verdict is the rule the count is
// made with, so a page listing the approvals beside the count never shows
// one as counting that the count left out (manual: two approvers, 4h
// expiry).
func TestJudgeApprovals(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	req := testRequest(tbl)
	req.Class, req.RequestedAt = Manual, testNow.Add(-6*time.Hour)
	other := approval(carol, time.Minute)
	other.IntentHash = "another-intent"
	lost := approval(bob, 2*time.Minute)
	lost.Void = "bob no longer may approve manual replays in acme"
	req.Approvals = []Approval{
		approval(bob, 5*time.Hour),          // past the class's 4h
		lost,                                // voided
		other,                               // another intent
		approval(aliceElsewhere, time.Hour), // the requester under another email
		approval(carol, 2*time.Hour),        // counts
		approval(carol, time.Hour),          // counts once
		approval(bobElsewhere, -time.Hour),  // dated after now
	}
	n, ignored := JudgeApprovals(tbl, req, testNow)
	want := []string{IgnoredExpired, IgnoredLostRight, IgnoredOtherIntent, IgnoredRequester, "", IgnoredAgain, IgnoredFuture}
	if n != 1 || !slices.Equal(ignored, want) {
		t.Fatalf("JudgeApprovals = %d, %q; want 1, %q", n, ignored, want)
	}
	if got := CountApprovals(tbl, req, testNow); got != n {
		t.Errorf("CountApprovals = %d, JudgeApprovals counted %d", got, n)
	}
	if d := Decide(tbl, testItem("orders.refund"), alice, req, testNow); d.ApprovalsHave != n {
		t.Errorf("Decide counts %d, JudgeApprovals %d", d.ApprovalsHave, n)
	}

	req.Class = "no-such-class"
	if n, ignored := JudgeApprovals(tbl, req, testNow); n != 0 || len(ignored) != len(req.Approvals) || ignored[4] != IgnoredNoClass {
		t.Errorf("without the class: %d, %q; want none counted, each %q", n, ignored, IgnoredNoClass)
	}
}
