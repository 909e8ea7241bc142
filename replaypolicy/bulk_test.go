package replaypolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNoBulk(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	// A manual item type that some subject makes rebuildable: bulk may go
	// there (only that rule's subjects), so it is not ruled out.
	subjected := mustParse(t, lines(
		`[[rule]]`, `item_type = "orders.reindex"`, `subject = "svc.*.search.>"`, `class = "rebuildable"`,
		`[[rule]]`, `item_type = "orders.>"`, `class = "manual"`,
		`[error_class.policy]`, `replay = "by_class"`, `min_class = "manual"`,
	))
	for _, tc := range []struct {
		name         string
		table        *Table
		itemType, ec string
		want         string
	}{
		{"BulkClass", tbl, "search.index_update", ErrTransient, ""},
		{"ApprovedBulkClass", tbl, "email.send", ErrTransient, ""},
		{"Manual", tbl, "orders.refund", ErrTransient, "manual items cannot be replayed in bulk: request them one at a time"},
		{"UnmatchedFallsToManual", tbl, "billing.charge", ErrTransient, "manual items cannot be replayed in bulk: request them one at a time"},
		{"SomeSubjectAllowsBulk", subjected, "orders.reindex", ErrTransient, ""},
		{"ErrorFloorManual", subjected, "orders.reindex", ErrPolicy,
			"manual (and rebuildable) items cannot be replayed in bulk: request them one at a time"},
		{"NoTable", nil, "orders.refund", ErrTransient, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.table.NoBulk(tc.itemType, tc.ec))
		})
	}
}
