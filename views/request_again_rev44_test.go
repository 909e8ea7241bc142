package views_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/views"
)

// TestRev44RequestAgainOffersTheNumberNotReplayed: an ended request's
// offer names how many of its dead letters it did not replay and are back
// in quarantine, and posts to its own route; with none, there is no offer.
func TestRev44RequestAgainOffersTheNumberNotReplayed(t *testing.T) {
	t.Parallel()
	doc, _ := render(t, views.RequestAgain(views.RequestAgainForm{URL: "/replay/requests/7/again", Count: 46}))
	offer := byTestID(doc, "request-again")
	require.Equal(t, 1, offer.Length())
	assert.Equal(t, "46", offer.AttrOr("data-count", ""))
	assert.Contains(t, squash(offer.Text()), "46 dead letters of this request were not replayed and are back in quarantine.")
	form := byTestID(doc, "request-again-form")
	assert.Equal(t, "post", form.AttrOr("method", ""))
	assert.Equal(t, "/replay/requests/7/again", form.AttrOr("action", ""))
	assert.Equal(t, "Request the 46 not replayed again", squash(byTestID(doc, "request-again-submit").Text()))

	doc, _ = render(t, views.RequestAgain(views.RequestAgainForm{URL: "/replay/requests/7/again", Count: 1, Error: "Nothing of request 7 is back in quarantine."}))
	assert.Contains(t, squash(byTestID(doc, "request-again").Text()), "1 dead letter of this request was not replayed and is back in quarantine.")
	assert.Equal(t, "Nothing of request 7 is back in quarantine.", squash(byTestID(doc, "field-error-again").Text()))

	doc, _ = render(t, views.RequestAgain(views.RequestAgainForm{URL: "/replay/requests/7/again"}))
	assert.Zero(t, byTestID(doc, "request-again").Length(), "nothing to offer")
}
