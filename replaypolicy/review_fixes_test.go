package replaypolicy

// Review (rev-fixes): neighbouring paths of this session's fixes.

import "testing"

// TestCatchAllThatTightensNothingStillWarns: UnlistedSubjects (72f57be,
// de15b0b) is silent once some subject rule is subject = ">", whatever
// its class. A subject rule only tightens, so a catch-all of the easiest
// class (rebuildable) tightens nothing: a target subject no other rule
// names still takes its item type's class, which the producer chooses,
// exactly the hole the warning is there to report; yet neither the
// console's log nor the policy page says so.
func TestCatchAllThatTightensNothingStillWarns(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, "[[rule]]\nsubject = \">\"\nclass = \"rebuildable\"\n"+testPolicy)
	if got := tbl.ClassOf("search.index_update", "app.acme.payments.capture").Class; got != Rebuildable {
		t.Fatalf("precondition: the item type's class is kept (got %s)", got)
	}
	if why := tbl.UnlistedSubjects(); why == "" {
		t.Errorf("a catch-all of class rebuildable classifies nothing, and UnlistedSubjects says nothing: search.index_update aimed at app.acme.payments.capture is rebuildable")
	}
}
