package views_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/views"
)

// TestRev43ConfirmWaitsSaysWhichTimeIsWhose: of three items that wait for
// a duplicate window, the warning said "replayed no earlier than 22:12:56
// UTC" and then, unlabelled, the first item's own sentence "deferred until
// 22:11:27 UTC: …": two times, and no saying whose each was; the rows
// below all said "goes". The time is now the last one's, each goes once
// its own window has passed, the sentence is labelled as the first one's,
// for example, and the warning says what the rows' "goes" means for them.
// One item's warning keeps its one time and needs no label.
func TestRev43ConfirmWaitsSaysWhichTimeIsWhose(t *testing.T) {
	t.Parallel()
	g := blockedGroup()
	g.Waits = views.WaitsView{Items: 3, Until: time.Date(2026, 12, 7, 22, 12, 56, 0, time.UTC), Streams: "SEARCH",
		First: `deferred until 2026-12-07 22:11:27 UTC: stream SEARCH drops message id "m-1" as a duplicate for 2m0s`}
	doc, _ := render(t, views.ReplayConfirm(page("Confirm replay", "deadletters"), views.ReplayConfirmModel{Action: "/replay/batches/b1", Groups: []views.ReplayGroup{g}}))
	waits := byTestID(doc, "replay-waits")
	require.Equal(t, 1, waits.Length())
	text := squash(waits.Text())
	assert.Contains(t, text, "3 items wait for the duplicate window of SEARCH: each is replayed once its own window has passed, the last no earlier than")
	assert.Contains(t, text, "The table below says goes of these items too: each goes once its own window has passed.")
	assert.Equal(t, `For example, the first of them: deferred until 2026-12-07 22:11:27 UTC: stream SEARCH drops message id "m-1" as a duplicate for 2m0s`,
		squash(byTestID(doc, "replay-waits-first").Text()))

	g.Waits = views.WaitsView{Items: 1, Until: time.Date(2026, 12, 7, 22, 11, 27, 0, time.UTC), Streams: "SEARCH",
		First: `deferred until 2026-12-07 22:11:27 UTC: stream SEARCH drops message id "m-1" as a duplicate for 2m0s`}
	doc, _ = render(t, views.ReplayConfirm(page("Confirm replay", "deadletters"), views.ReplayConfirmModel{Action: "/replay/batches/b1", Groups: []views.ReplayGroup{g}}))
	text = squash(byTestID(doc, "replay-waits").Text())
	assert.Contains(t, text, "1 item waits for the duplicate window of SEARCH: replayed no earlier than")
	assert.Contains(t, text, "The table below says goes of this item too: it goes once its window has passed.")
	assert.NotContains(t, text, "For example")
}

// squash is text with its runs of white space as one space, as it reads.
func squash(text string) string {
	return strings.Join(strings.Fields(text), " ")
}
