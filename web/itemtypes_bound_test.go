package web_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestItemTypesBeyondTheBounds: with more item types than the pages list
// (dlq.ItemTypeChoices, dlq.DashboardItemTypes, dlq.GroupItemTypes), the
// dashboard lists the first by unresolved and says how many more, a group
// row names the first by name and "and N more", and the item type filter
// is a text input suggesting the most frequent, which filters by any item
// type typed, as the select did.
func TestItemTypesBeyondTheBounds(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	const common, rare = 240, 10 // 250 item types: the common ones hold two dead letters each
	var letters []testfactory.Letter
	for i := range common {
		for k := range 2 {
			letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: fmt.Sprintf("common.%03d", i), MsgID: fmt.Sprintf("c-%d-%d", i, k), Payload: []byte(`{}`)})
		}
	}
	for i := range rare {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: fmt.Sprintf("rare.%03d", i), MsgID: fmt.Sprintf("r-%d", i), Payload: []byte(`{}`)})
	}
	testfactory.DeadLetters(t, b.Pool, letters...)

	t.Run("Dashboard", func(t *testing.T) {
		d := b.Do(t, oncall, "GET", "/", nil, nil).Doc(t)
		rows := byID(d, "by-type").Find(`[data-testid="dim-row"]`)
		require.Equal(t, dlq.DashboardItemTypes, rows.Length())
		assert.Equal(t, "common.000", rows.First().AttrOr("data-value", ""), "most unresolved first, then by name")
		more := byID(d, "by-type-more")
		assert.Equal(t, fmt.Sprintf("and %d more item types", common+rare-dlq.DashboardItemTypes), text(more))
		assert.Equal(t, "/deadletters?status=unresolved", more.Find("a").AttrOr("href", ""))
		assert.Zero(t, byID(d, "by-class-more").Length(), "the classes are few")
		types := byID(d, "group-types")
		require.Equal(t, 1, types.Length())
		assert.Equal(t, fmt.Sprintf("common.000, common.001, common.002, common.003, common.004 and %d more", common+rare-dlq.GroupItemTypes), text(types))
	})
	t.Run("GroupRow", func(t *testing.T) {
		d := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t)
		types := byID(d, "group-types")
		require.Equal(t, 1, types.Length())
		want := fmt.Sprintf("common.000, common.001, common.002, common.003, common.004 and %d more", common+rare-dlq.GroupItemTypes)
		assert.Equal(t, want, text(types))
		assert.Equal(t, want, types.AttrOr("title", ""))
	})
	for _, path := range []string{"/deadletters", "/groups"} {
		t.Run("TypedFilter"+path, func(t *testing.T) {
			d := b.Do(t, oncall, "GET", path+"?type=rare.007", nil, nil).Doc(t)
			assert.Zero(t, d.Find(`select[name="type"]`).Length(), "no select of every item type")
			in := d.Find(`input[name="type"]`)
			require.Equal(t, 1, in.Length())
			assert.Equal(t, "rare.007", in.AttrOr("value", ""), "the filter's value shown")
			choices := d.Find("datalist#" + in.AttrOr("list", "") + " option")
			assert.Equal(t, dlq.ItemTypeChoices, choices.Length())
			assert.Equal(t, "common.000", choices.First().AttrOr("value", ""), "the most frequent, by name")
			if path == "/groups" {
				assert.Equal(t, "rare.007", text(byID(d, "group-types")), "the group filtered by the item type typed")
				return
			}
			assert.Equal(t, "1 dead letter", text(byID(d, "deadletter-count")))
			assert.Equal(t, "r-7", text(byID(d, "deadletter-row").Find(`[data-testid="row-msgid"]`)))
		})
	}
}
