package replaypolicy

import (
	"strings"
	"testing"
)

// TestRevPolicy30OverlapWithAnotherClassRefused: the first [[rule]] of a
// kind that matches decides, so two rules that both match some items,
// neither only the other's, with different classes, left the items both
// match to the earlier rule's class, written nowhere as meant for them:
// "billing.*" rebuildable before "*.refund" manual made a billing.refund
// replay need no approver at all (bulk up to 10,000), where the file says
// refunds are manual. Such a file is refused on the later rule's line, as
// retention rules are; narrower first, the same class, a rule for the
// overlap put first, or globs that never meet still load, and the rule
// for the overlap decides it.
func TestRevPolicy30OverlapWithAnotherClassRefused(t *testing.T) {
	refused := map[string]struct{ src, want string }{
		"ItemTypes": {lines(`[[rule]]`, `item_type = "billing.*"`, `class = "rebuildable"`, `[[rule]]`, `item_type = "*.refund"`, `class = "manual"`),
			`line 5: rule 2: rule 1 (item_type "billing.*", rebuildable) and this rule (item_type "*.refund", manual) both match item_type "billing.refund", neither only the other's: the first rule that matches decides, so those are rebuildable`},
		"Subjects": {lines(`[[rule]]`, `subject = "*.*.billing.*"`, `class = "rebuildable"`, `[[rule]]`, `subject = "*.*.*.refund"`, `class = "manual"`),
			`rule 2: rule 1 (subject "*.*.billing.*", rebuildable) and this rule (subject "*.*.*.refund", manual) both match subject "*.*.billing.refund"`},
		"SubjectOfOne": {lines(`[[rule]]`, `item_type = "orders.*"`, `subject = "app.acme.>"`, `class = "rebuildable"`, `[[rule]]`, `item_type = "*.refund"`, `class = "manual"`),
			`rule 2: rule 1 (item_type "orders.*", subject "app.acme.>", rebuildable) and this rule (item_type "*.refund", manual) both match item_type "orders.refund", subject "app.acme.>"`},
		"StricterFirst": {lines(`[[rule]]`, `item_type = "*.refund"`, `class = "manual"`, `[[rule]]`, `item_type = "billing.*"`, `class = "rebuildable"`),
			`rule 2: rule 1 (item_type "*.refund", manual) and this rule (item_type "billing.*", rebuildable) both match item_type "billing.refund"`},
		"Tails": {lines(`[[rule]]`, `item_type = "billing.>"`, `class = "dedupe"`, `[[rule]]`, `item_type = "*.refund.>"`, `class = "manual"`),
			`both match item_type "billing.refund.>"`},
	}
	for name, tt := range refused {
		_, err := Parse("bad.toml", []byte(tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v; want it to contain %q", name, err, tt.want)
		}
	}
	loads := map[string]struct {
		src                     string
		itemType, subject, want string
	}{
		"SettledFirst": {lines(`[[rule]]`, `item_type = "billing.refund"`, `class = "manual"`, `[[rule]]`, `item_type = "billing.*"`, `class = "rebuildable"`,
			`[[rule]]`, `item_type = "*.refund"`, `class = "manual"`), "billing.refund", "app.acme.billing.refund", "manual"},
		"NarrowerFirst": {lines(`[[rule]]`, `item_type = "billing.refund"`, `class = "rebuildable"`, `[[rule]]`, `item_type = "billing.*"`, `class = "manual"`),
			"billing.refund", "app.acme.billing.refund", "rebuildable"},
		"SameClass": {lines(`[[rule]]`, `item_type = "billing.*"`, `class = "manual"`, `[[rule]]`, `item_type = "*.refund"`, `class = "manual"`),
			"billing.refund", "app.acme.billing.refund", "manual"},
		"SubjectsApart": {lines(`[[rule]]`, `item_type = "orders.*"`, `subject = "app.acme.>"`, `class = "rebuildable"`,
			`[[rule]]`, `item_type = "*.refund"`, `subject = "app.globex.>"`, `class = "manual"`), "orders.refund", "app.acme.orders.refund", "rebuildable"},
		"KindsApart": {lines(`[[rule]]`, `item_type = "billing.*"`, `class = "rebuildable"`, `[[rule]]`, `subject = "*.*.*.refund"`, `class = "manual"`),
			"billing.refund", "app.acme.billing.refund", "manual"}, // the stricter of the item type's and the subject's
	}
	for name, tt := range loads {
		tbl, err := Parse("ok.toml", []byte(tt.src))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := tbl.ClassOf(tt.itemType, tt.subject).Class; string(got) != tt.want {
			t.Errorf("%s: %s to %s is %s, want %s", name, tt.itemType, tt.subject, got, tt.want)
		}
	}
}
