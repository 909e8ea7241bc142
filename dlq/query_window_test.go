package dlq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTextWindows checks the windows a text search reads: outward from
// where the page starts, each longer than the one before, together
// covering all time on that side, the first sized by the table's rate.
func TestTextWindows(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var parts []Partition
	for d := range 30 { // 30 days of 1,000 dead letters each
		day := Day(at).AddDate(0, 0, d-29)
		parts = append(parts, Partition{Name: PartitionName(day), Day: day, MinID: int64(d*1000 + 1), MaxID: int64(d*1000 + 1000)})
	}
	oldest := parts[0].Day

	older := textWindows(parts, at, at, false, 1000)
	require.GreaterOrEqual(t, len(older), 3)
	assert.Equal(t, maxTime, older[0].hi, "the first window takes what is newer than now too")
	assert.Equal(t, minTime, older[len(older)-1].lo, "the last reaches the start of time")
	first := at.Sub(older[0].lo)
	assert.InDelta(t, float64(at.Sub(oldest))/30, float64(first), float64(time.Minute), "the first window holds about 1,000 at the table's rate")
	for i := 1; i < len(older); i++ {
		assert.Equal(t, older[i-1].lo, older[i].hi, "window %d follows window %d", i, i-1)
		if i < len(older)-1 {
			assert.Greater(t, at.Sub(older[i].lo), textWindowGrowth*at.Sub(older[i-1].lo)-time.Minute, "windows grow")
		}
	}

	from := at.AddDate(0, 0, -20)
	newer := textWindows(parts, at, from, true, 1000)
	require.GreaterOrEqual(t, len(newer), 2)
	assert.Equal(t, minTime, newer[0].lo, "the first window takes what is older than the cursor too")
	assert.Equal(t, maxTime, newer[len(newer)-1].hi, "the last reaches the end of time")
	for i := 1; i < len(newer); i++ {
		assert.Equal(t, newer[i-1].hi, newer[i].lo, "window %d follows window %d", i, i-1)
	}

	empty := textWindows(nil, at, at, false, 1000)
	assert.Equal(t, []span{{minTime, maxTime}}, empty, "an empty table is one window")
}
