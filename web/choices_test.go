package web

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestWithChoiceAddsATypeThePageShows: the item type select's choices come
// from the counters snapshot, which can be a moment behind the rows; a
// row's type it lacks is put in its sorted place, once, and the snapshot's
// own list is not changed under it.
func TestWithChoiceAddsATypeThePageShows(t *testing.T) {
	snap := []string{"analytics.event", "search.index_update"}
	got := withChoice(snap, "email.send")
	assert.Equal(t, []string{"analytics.event", "email.send", "search.index_update"}, got)
	assert.Equal(t, []string{"analytics.event", "search.index_update"}, snap, "the snapshot's list is left as it was")
	assert.Equal(t, got, withChoice(got, "email.send"), "a type already a choice is not added twice")
	assert.Equal(t, []string{"a"}, withChoice(nil, "a"))
}
