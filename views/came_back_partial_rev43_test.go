package views_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/views"
)

// TestRev43CameBackOfABigRequestSaysWhatWasChecked: the request page
// checks the first 10,000 items of a request for returns (each a probe of
// every partition newer than the item's dead letter). Of a request with
// more, it says how many of those came back and that the rest are not
// checked there, instead of counting them against every replayed item.
func TestRev43CameBackOfABigRequestSaysWhatWasChecked(t *testing.T) {
	t.Parallel()
	m := views.ReplayRequestModel{ID: 7, Tenant: "acme", Class: "rebuildable", Status: "done", CameBack: 3}
	m.Progress.Replayed = 20000
	doc, _ := render(t, views.ReplayRequest(page("Replay request 7", "replays"), m))
	assert.Equal(t, "3 of 20,000 replayed items came back as new dead letters.", squash(byTestID(doc, "replay-came-back-count").Text()))

	m.CameBackOf = 10000
	doc, _ = render(t, views.ReplayRequest(page("Replay request 7", "replays"), m))
	assert.Equal(t, "3 replayed items of the first 10,000 came back as new dead letters.", squash(byTestID(doc, "replay-came-back-count").Text()))
	assert.Contains(t, squash(byTestID(doc, "replay-came-back").Text()), "Items past the first 10,000 are not checked here")
}
