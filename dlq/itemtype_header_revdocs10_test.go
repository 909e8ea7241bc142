package dlq

import (
	"slices"
	"testing"
)

// TestRevDocs10WildcardItemTypeFromHeaderFlagged: docs/header-contract.md
// says "An item type with a wildcard token is kept, flagged
// invalid:item_type" and its flag table "invalid:item_type: the item
// type holds a wildcard token". ParseDLQ checks only an item type taken
// from the subject (checkItemType): when the subject has none
// (dlq.acme) and the item type comes from Dlq-Item-Type, "orders.>" or
// "email.*" is stored as the dead letter's item type with only
// missing:item_type: nothing on the row or its page says it names no
// item type, unlike the same item type sent in the subject.
// (review revdocs10)
func TestRevDocs10WildcardItemTypeFromHeaderFlagged(t *testing.T) {
	for _, it := range []string{"orders.>", "email.*", "*"} {
		r := ParseDLQ("dlq", received("dlq.acme", map[string][]string{HeaderItemType: {it}}, "{}"))
		if r.ItemType != it {
			t.Fatalf("item type %q stored as %q", it, r.ItemType)
		}
		if !slices.Contains(r.Flags, "invalid:item_type") {
			t.Errorf("Dlq-Item-Type %q (subject dlq.acme) stored as the item type with flags %v: no invalid:item_type", it, r.Flags)
		}
	}
}
