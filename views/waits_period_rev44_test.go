package views_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/views"
)

// TestRev44WaitsSentenceEndsAtItsTime: the confirm page's duplicate-window
// warning read "… replayed no earlier than 2026-12-08 00:32:49 UTC ." (the
// template's line break between the time and its period was written as a
// space). The sentence ends at its time, and, where some items wait for a
// stream to copy them too, at the clause after it.
func TestRev44WaitsSentenceEndsAtItsTime(t *testing.T) {
	t.Parallel()
	until := time.Date(2026, 12, 8, 0, 32, 49, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		waits views.WaitsView
		ends  string
	}{
		{"OneItem", views.WaitsView{Items: 1, Until: until, Streams: "APP"},
			"1 item waits for the duplicate window of APP: replayed no earlier than 2026-12-08 00:32:49 UTC. A replay keeps"},
		{"SeveralItems", views.WaitsView{Items: 3, Until: until, Streams: "APP"},
			"the last no earlier than 2026-12-08 00:32:49 UTC. A replay keeps"},
		{"SomeBehindACopy", views.WaitsView{Items: 3, Behind: 1, Until: until, Streams: "APP, AGG"},
			"the last no earlier than 2026-12-08 00:32:49 UTC (1 of them once a stream made since the original has copied it, and its window has passed). A replay keeps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := blockedGroup()
			g.Waits = tc.waits
			doc, _ := render(t, views.ReplayConfirm(page("Confirm replay", "deadletters"), views.ReplayConfirmModel{Action: "/replay/batches/b1", Groups: []views.ReplayGroup{g}}))
			waits := byTestID(doc, "replay-waits")
			require.Equal(t, 1, waits.Length())
			text := squash(waits.Text())
			assert.Contains(t, text, tc.ends)
			assert.NotContains(t, text, " .", "no space before a period")
		})
	}
}
