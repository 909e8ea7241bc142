package replaypolicy

import (
	"strings"
	"testing"
)

// TestBulkCapOfApprovableRequests: a class without approvals may take up
// to 100,000 items in one request (it publishes without an approver), and
// one with approvals at most MaxApprovableItems, as many as a request page
// lists for its approver. A request of a class without approvals that
// needs an approval all the same (an edited payload, an error class that
// asks for one) is refused at submit when it is over MaxApprovableItems,
// instead of waiting for an approval nobody can give; at the limit, or
// without approvals, the cap is the class's.
func TestBulkCapOfApprovableRequests(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, lines(
		`[[rule]]`, `item_type = "search.*"`, `class = "rebuildable"`,
		`[class.rebuildable]`, `bulk_cap = 100000`,
		`[class.dedupe]`, `bulk_cap = 100000`,
		`[class.same_operation]`, `bulk_cap = 20000`,
	))
	if k, _ := tbl.Knobs(Rebuildable); k.BulkCap != 100_000 {
		t.Fatalf("rebuildable bulk_cap = %d, want 100000", k.BulkCap)
	}
	item := testItem("search.index_update")
	request := func(items int, edited bool, errorClass string) Decision {
		it := item
		it.ErrorClass = errorClass
		req := testRequest(tbl)
		req.Items, req.Bulk, req.PayloadEdited = items, true, edited
		req.ReconciliationNote = "checked the index: the update never landed"
		return Decide(tbl, it, alice, req, testNow)
	}
	tests := []struct {
		name       string
		items      int
		edited     bool
		errorClass string
		refusedWhy string // "" when not refused
		approval   bool   // an approval is asked
	}{
		{"NoApprovalOverLimit", 100_000, false, "", "", false},
		{"ErrorClassOverLimit", MaxApprovableItems + 1, false, ErrUnknownEffect, `an item's error class "unknown_effect" asks for it`, true},
		{"EditedOverLimit", MaxApprovableItems + 1, true, "", "an edited payload", true},
		{"ErrorClassAtLimit", MaxApprovableItems, false, ErrUnknownEffect, "", true},
		{"EditedAtLimit", MaxApprovableItems, true, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := request(tt.items, tt.edited, tt.errorClass)
			if tt.refusedWhy != "" {
				if d.Requirement != Refused || d.Check != CheckBulkCap {
					t.Fatalf("%d items: %v (%s), want refused by %s: %s", tt.items, d.Requirement, d.Check, CheckBulkCap, d.Reason)
				}
				if want := "over the 20000 a request that needs an approval can hold (" + tt.refusedWhy + ")"; !strings.Contains(d.Reason, want) {
					t.Errorf("reason %q does not say %q", d.Reason, want)
				}
				return
			}
			if d.Requirement == Refused {
				t.Fatalf("%d items refused: %s: %s", tt.items, d.Check, d.Reason)
			}
			if asked := d.Requirement != Direct; asked != tt.approval {
				t.Errorf("%d items: %v, approval asked %t, want %t", tt.items, d.Requirement, asked, tt.approval)
			}
		})
	}
}
