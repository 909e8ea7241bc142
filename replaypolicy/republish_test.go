package replaypolicy

import (
	"strings"
	"testing"
)

// TestRepublishOnlyWhereOneWordSufficed: "not applied, republish" is one
// person's word, so it is offered only for an item whose request needed
// fewer than two approvers to publish; how many it needed is the most of
// what the rules asked at submit, what its classes ask under the table
// now, and their floor (manual: two without any table).
func TestRepublishOnlyWhereOneWordSufficed(t *testing.T) {
	t.Parallel()
	tbl, strict := mustParse(t, testPolicy), mustParse(t, strings.Replace(testPolicy, "[class.revalidate]\napprovals = 1", "[class.revalidate]\napprovals = 2", 1))
	for _, tt := range []struct {
		name   string
		t      *Table
		class  Class
		union  []Class
		asked  int
		want   int
		status string
		check  string // "" when republish is offered
	}{
		{"rebuildable", tbl, Rebuildable, nil, 0, 0, "done_with_problems", ""},
		{"edited dedupe: one approver", tbl, Dedupe, nil, 1, 1, "running", ""},
		{"same_operation", tbl, SameOperation, nil, 1, 1, "done_with_problems", ""},
		{"manual", tbl, Manual, nil, 2, 2, "done_with_problems", CheckRepublishTwoApprovers},
		{"manual, nothing stored (a request older than the count)", tbl, Manual, nil, 0, 2, "running", CheckRepublishTwoApprovers},
		{"manual without a table", nil, Manual, nil, 0, 2, "approved", CheckRepublishTwoApprovers},
		{"dedupe with a manual item in its union", tbl, Dedupe, []Class{Manual}, 0, 2, "done_with_problems", CheckRepublishTwoApprovers},
		{"an error class asked for two", tbl, Rebuildable, nil, 2, 2, "done_with_problems", CheckRepublishTwoApprovers},
		{"revalidate, tightened to two since", strict, Revalidate, nil, 1, 2, "done_with_problems", CheckRepublishTwoApprovers},
		{"a class the table lacks", tbl, Class("gone"), nil, 1, 1, "done_with_problems", ""},
		{"one approver, cancelled", tbl, SameOperation, nil, 1, 1, "cancelled", CheckDecisionClosed},
		{"two approvers, cancelled: the two-person rule first", tbl, Manual, nil, 2, 2, "cancelled", CheckRepublishTwoApprovers},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := PublishApprovals(tt.t, tt.class, tt.union, tt.asked)
			if n != tt.want {
				t.Fatalf("PublishApprovals = %d, want %d", n, tt.want)
			}
			v := JudgeRepublish(tt.status, n)
			if v.Check != tt.check || (tt.check == "") != (v.Outcome == Go) {
				t.Errorf("JudgeRepublish = %s by %q (%s); want check %q", v.Outcome, v.Check, v.Reason, tt.check)
			}
			// Reconcile judges a republish as the page offers it, note or not.
			if r := JudgeReconcile(Republish, "", tt.status, n); tt.check != "" && (r.Check != v.Check || r.Reason != v.Reason) {
				t.Errorf("JudgeReconcile = %+v, want JudgeRepublish's %+v", r, v)
			}
			// Applied and leave it are open whatever the class.
			for _, d := range []Choice{Applied, NotApplied} {
				if r := JudgeReconcile(d, "checked the target", tt.status, n); r.Outcome != Go {
					t.Errorf("JudgeReconcile(%s) = %s: %s", d, r.Outcome, r.Reason)
				}
			}
		})
	}
}
