package replaypolicy

import (
	"strings"
	"testing"
)

// TestJudgeEditItem judges payload edits on the item's own classing: an
// item same_operation by its item type but classed revalidate by its
// target subject (or the other way round) may not be edited, as one of a
// plain same_operation type may not; the refusal names the class and the
// rule that made it same_operation. Items with no same_operation in their
// union may be edited; no table refuses.
func TestJudgeEditItem(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, lines(
		`[[rule]]`, `item_type = "email.*"`, `class = "same_operation"`,
		`[[rule]]`, `item_type = "analytics.*"`, `class = "dedupe"`,
		`[[rule]]`, `subject = "svc.*.accounts.>"`, `class = "revalidate"`,
		`[[rule]]`, `subject = "svc.*.email.>"`, `class = "same_operation"`,
	))
	for _, tc := range []struct {
		name, itemType, subject string
		table                   *Table
		want                    Outcome
		check, says             string
	}{
		{name: "SameOperationType", itemType: "email.send", subject: "svc.acme.mail.x", table: tbl, want: Block, check: CheckEditClass,
			says: "same_operation: the payload of a same_operation item cannot be edited"},
		{name: "SameOperationTypeUnderAStricterSubject", itemType: "email.send", subject: "svc.acme.accounts.grant", table: tbl, want: Block,
			check: CheckEditClass, says: `revalidate (the target subject "svc.acme.accounts.grant" is revalidate by rule 3, stricter than item type "email.send"'s same_operation)`},
		{name: "SameOperationSubject", itemType: "analytics.event", subject: "svc.acme.email.x", table: tbl, want: Block, check: CheckEditClass,
			says: "cannot be edited"},
		{name: "NoSameOperation", itemType: "analytics.event", subject: "svc.acme.accounts.grant", table: tbl, want: Go},
		{name: "NoTable", itemType: "analytics.event", subject: "svc.acme.mail.x", want: Block, check: CheckNoPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := testItem(tc.itemType)
			it.OriginalSubject = tc.subject
			v := JudgeEditItem(tc.table, it)
			if v.Outcome != tc.want || v.Check != tc.check || !strings.Contains(v.Reason, tc.says) {
				t.Errorf("JudgeEditItem = %s %s %q, want %s %s containing %q", v.Outcome, v.Check, v.Reason, tc.want, tc.check, tc.says)
			}
			if tc.want == Block && tc.check == CheckEditClass {
				it.PayloadEdited = true
				if e := JudgeItem(tc.table, it, AtRequest); e.Check != CheckEdited {
					t.Errorf("an item whose edit is refused, edited all the same, is judged %s %q: the two must agree", e.Check, e.Reason)
				}
			}
		})
	}
}
