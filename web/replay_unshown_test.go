package web

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/views"
)

// TestUnshown: a request is approved from its page only when the page
// lists every item, skipped ones too, and shows every edit in full: the
// diff of every edit made in the browser's form (up to
// replay.MaxEditablePayload), not of one larger, made otherwise.
func TestUnshown(t *testing.T) {
	t.Parallel()
	items := func(n int) []replay.Item { return make([]replay.Item, n) }
	edits := func(n int) []replay.Edit { return make([]replay.Edit, n) }
	for _, tc := range []struct {
		name    string
		v       replay.View
		refused string
	}{
		{"AllShown", replay.View{Request: replay.Request{ItemCount: 2, SkippedCount: 1}, Items: items(3), Edited: 1, Edits: edits(1)}, ""},
		{"ItemsCut", replay.View{Request: replay.Request{ItemCount: 3}, Items: items(2)}, "holds 3 items and this page lists the first 2"},
		{"SkippedCut", replay.View{Request: replay.Request{ItemCount: 2, SkippedCount: 1}, Items: items(2)}, "holds 3 items and this page lists the first 2"},
		{"EditsCut", replay.View{Request: replay.Request{ItemCount: 2}, Items: items(2), Edited: 2, Edits: edits(1)}, "2 payloads of this request were edited and this page shows the first 1"},
		{"BrowserEditShown", replay.View{Request: replay.Request{ItemCount: 1}, Items: items(1), Edited: 1,
			Edits: []replay.Edit{{OriginalSize: replay.MaxEditablePayload, EditedSize: replay.MaxEditablePayload}}}, ""},
		{"EditTooLargeToCompare", replay.View{Request: replay.Request{ItemCount: 1}, Items: items(1), Edited: 1,
			Edits: []replay.Edit{{OriginalSize: views.MaxDiffBytes + 1, EditedSize: 10}}}, "larger than this page compares"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			why := unshown(tc.v)
			if tc.refused == "" {
				assert.Empty(t, why)
				return
			}
			assert.Contains(t, why, tc.refused)
		})
	}
}
