package dlq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestWatchedStreamWarnedAfterItsGrace: a watched stream missing at start
// (make run's demo, producers deployed with the console) is not warned of
// until it has been missing for the grace; then it is, and again only
// every watchedWarnEvery; one that appears and goes again starts over.
func TestWatchedStreamWarnedAfterItsGrace(t *testing.T) {
	t.Parallel()
	b := newHealthBoard()
	start := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }

	was, warn := b.setWatched("ORDERS", true, at(0), time.Minute)
	assert.False(t, was)
	assert.False(t, warn, "missing at the first check, within the grace")
	_, warn = b.setWatched("ORDERS", true, at(30*time.Second), time.Minute)
	assert.False(t, warn, "still within the grace")
	assert.True(t, b.watchedMissing()["ORDERS"], "the gauge says it meanwhile")
	was, warn = b.setWatched("ORDERS", true, at(time.Minute), time.Minute)
	assert.True(t, was)
	assert.True(t, warn, "missing for the grace: warned")
	_, warn = b.setWatched("ORDERS", true, at(5*time.Minute), time.Minute)
	assert.False(t, warn, "warned of within watchedWarnEvery")
	_, warn = b.setWatched("ORDERS", true, at(time.Minute+watchedWarnEvery), time.Minute)
	assert.True(t, warn, "warned again after watchedWarnEvery")

	was, warn = b.setWatched("ORDERS", false, at(20*time.Minute), time.Minute)
	assert.True(t, was, "it was missing: the caller says it is there now")
	assert.False(t, warn)
	_, warn = b.setWatched("ORDERS", true, at(21*time.Minute), time.Minute)
	assert.False(t, warn, "gone again: a new grace")

	_, warn = b.setWatched("EMAILS", true, at(0), 0)
	assert.True(t, warn, "no grace: warned at once")
}
