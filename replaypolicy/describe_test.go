package replaypolicy

import (
	"strings"
	"testing"
)

// TestDescribeSaysOnlyWhatItsKnobsAllow: a class's description is written
// from its knobs, so a class without bulk never offers a bulk phrase, and
// manual's says nothing that reads as the item's own classification (it
// is shown beside "by rule orders.refund").
func TestDescribeSaysOnlyWhatItsKnobsAllow(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, strings.Replace(testPolicy, "[class.same_operation]\n", "[class.same_operation]\ntyped_confirmation = true\n", 1))
	manual := tbl.Describe(Manual)
	for _, never := range []string{"REPLAY <n> ITEMS", "bulk request", "or an item type no rule matches"} {
		if strings.Contains(manual, never) {
			t.Errorf("Describe(manual) = %q; a class with no bulk must not say %q", manual, never)
		}
	}
	for _, want := range []string{"one item per request, no bulk", `type "REPLAY <message id>" to confirm`} {
		if !strings.Contains(manual, want) {
			t.Errorf("Describe(manual) = %q, want it to contain %q", manual, want)
		}
	}
	same := tbl.Describe(SameOperation)
	if !strings.Contains(same, `"REPLAY <n> ITEMS" for a bulk request`) || !strings.Contains(same, "bulk requests up to 500 items") {
		t.Errorf("Describe(same_operation) = %q; a bulk class with typed confirmation names both phrases", same)
	}
}

// TestRev34DescribeRequestSaysTheStrictestOfItsClasses: a request is held
// to the strictest knobs of every class its items were classed by
// (RequestKnobs), but the request, approvals and confirm pages described
// its class alone: a revalidate request with a same_operation item read
// "expires after 8h" and no phrase, where same_operation's typed
// confirmation and 2h expiry held. DescribeRequest says what holds, and
// why; a request of one class reads as Describe.
func TestRev34DescribeRequestSaysTheStrictestOfItsClasses(t *testing.T) {
	t.Parallel()
	src := strings.Replace(testPolicy, "[class.same_operation]\n", "[class.same_operation]\ntyped_confirmation = true\n", 1)
	tbl := mustParse(t, strings.Replace(src, "max_rate = 500\napproval_expiry = \"24h\"", "max_rate = 500\napproval_expiry = \"2h\"", 1))
	if got, want := tbl.DescribeRequest(Revalidate, nil), tbl.Describe(Revalidate); got != want {
		t.Errorf("DescribeRequest(revalidate, none) = %q, want Describe's %q", got, want)
	}
	if got, want := tbl.DescribeRequest(Revalidate, []Class{Revalidate}), tbl.Describe(Revalidate); got != want {
		t.Errorf("DescribeRequest(revalidate, revalidate) = %q, want Describe's %q", got, want)
	}
	got := tbl.DescribeRequest(Revalidate, []Class{Revalidate, SameOperation})
	for _, want := range []string{"expires after 2h", `type "REPLAY <message id>"`, "classed same_operation as well"} {
		if !strings.Contains(got, want) {
			t.Errorf("DescribeRequest(revalidate, same_operation) = %q, want it to contain %q", got, want)
		}
	}
	if strings.Contains(got, "expires after 8h") {
		t.Errorf("DescribeRequest(revalidate, same_operation) = %q: revalidate's own 8h does not hold", got)
	}
}
