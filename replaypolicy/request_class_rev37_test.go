package replaypolicy

import "testing"

// TestRev37RequestKeepsItsOwnClassesLimits: a request drafted as a dedupe
// request (two approvals by this table) whose items are judged
// rebuildable at the submit is held to its own class's limits as well as
// its items': JudgeRequest takes the strictest of both, as JudgeDraft
// does, so that an item's class judged weaker at the submit than the
// draft it was drafted in never loosens them.
func TestRev37RequestKeepsItsOwnClassesLimits(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, lines(
		`[[rule]]`, `item_type = "search.*"`, `class = "rebuildable"`,
		`[class.dedupe]`, `approvals = 2`,
	))
	going := JudgeItem(tbl, testItem("search.index_update"), AtRequest)
	if going.Outcome != Go || going.Class != Rebuildable {
		t.Fatalf("the item: %s %s %q", going.Class, going.Outcome, going.Reason)
	}
	req := testRequest(tbl)
	req.Class = Dedupe
	terms, v := JudgeRequest(tbl, []Verdict{going}, req)
	if v.Outcome != Go || terms.Knobs.Approvals != 2 {
		t.Errorf("approvals of the request's class dedupe (2) over its item's rebuildable: %d (%s %q)", terms.Knobs.Approvals, v.Outcome, v.Reason)
	}
}
