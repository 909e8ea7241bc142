package views_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/views"
)

// TestFixReplay14ConfirmWaitsForACopyBehind: items that wait only for a
// copy made since the original that has not copied it yet get no time
// (none is known), and say why; with others that wait until a time, the
// time is shown and how many wait longer.
func TestFixReplay14ConfirmWaitsForACopyBehind(t *testing.T) {
	t.Parallel()
	g := blockedGroup()
	g.Waits = views.WaitsView{Items: 1, Behind: 1, Streams: "AGG", First: "deferred: stream AGG copies the subject from stream APP, and stream AGG has not copied any message"}
	doc, _ := render(t, views.ReplayConfirm(page("Confirm replay", "deadletters"), views.ReplayConfirmModel{Action: "/replay/batches/b1", Groups: []views.ReplayGroup{g}}))
	text := byTestID(doc, "replay-waits").Text()
	assert.Contains(t, text, "1 item waits for the duplicate window of AGG: a stream made since the original has not copied it yet, and it is replayed once it has")
	assert.NotContains(t, text, "no earlier than")
	assert.Contains(t, text, "stream AGG has not copied any message")

	g.Waits = views.WaitsView{Items: 3, Behind: 1, Until: time.Date(2026, 12, 3, 23, 0, 0, 0, time.UTC), Streams: "APP, AGG"}
	doc, _ = render(t, views.ReplayConfirm(page("Confirm replay", "deadletters"), views.ReplayConfirmModel{Action: "/replay/batches/b1", Groups: []views.ReplayGroup{g}}))
	text = byTestID(doc, "replay-waits").Text()
	assert.Contains(t, text, "3 items wait for the duplicate window of APP, AGG: each is replayed once its own window has passed, the last no earlier than")
	assert.Contains(t, text, "(1 of them once a stream made since the original has copied it, and its window has passed)")
}
