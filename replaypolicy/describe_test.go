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
