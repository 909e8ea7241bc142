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

// TestTextWindowsFromAFarCursor (review 19b): a page cursor is a link
// anyone who may read the list can edit. From one centuries away on the
// side the search goes (the year 1000 going newer, 5000 going older), each
// window eight times longer than the last grew past the 292 years a
// duration holds, wrapped round to nothing, and the loop appended windows
// until the process ran out of memory. Whatever the cursor, the windows
// are few, follow one another and cover all time on that side.
func TestTextWindowsFromAFarCursor(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	parts := []Partition{{Name: PartitionName(Day(at)), Day: Day(at), MinID: 1, MaxID: 1000}}
	for _, c := range []struct {
		from  time.Time
		newer bool
	}{
		{time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{minTime, true},
		{time.Date(5000, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{maxTime, false},
		{at, true},
		{at, false},
	} {
		ws := textWindows(parts, at, c.from, c.newer, 1000)
		require.NotEmpty(t, ws)
		assert.LessOrEqual(t, len(ws), 16, "from %s (newer %v): a few windows", c.from, c.newer)
		if c.newer {
			assert.Equal(t, minTime, ws[0].lo)
			assert.Equal(t, maxTime, ws[len(ws)-1].hi)
		} else {
			assert.Equal(t, maxTime, ws[0].hi)
			assert.Equal(t, minTime, ws[len(ws)-1].lo)
		}
		for i := 1; i < len(ws); i++ {
			if c.newer {
				assert.Equal(t, ws[i-1].hi, ws[i].lo, "from %s: window %d follows window %d", c.from, i, i-1)
			} else {
				assert.Equal(t, ws[i-1].lo, ws[i].hi, "from %s: window %d follows window %d", c.from, i, i-1)
			}
		}
	}
}

// TestWholeDay checks when a text search's window is widened to the rest
// of its day: when it holds at least half of the day's dead letters on
// the side the search goes, and never when it holds less; the windows
// after it then start where the day ends, none of them repeated.
func TestWholeDay(t *testing.T) {
	day := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	from := day.Add(20 * time.Hour)
	minutes := func(counts map[time.Duration]int64) []minuteCount {
		var out []minuteCount
		for off, n := range counts {
			out = append(out, minuteCount{day.Add(off), n})
		}
		return out
	}
	older := []span{
		{from.Add(-time.Hour), maxTime},
		{from.Add(-8 * time.Hour), from.Add(-time.Hour)},
		{from.Add(-64 * time.Hour), from.Add(-8 * time.Hour)},
		{minTime, from.Add(-64 * time.Hour)},
	}
	flood := minutes(map[time.Duration]int64{3 * time.Hour: 100, 19*time.Hour + 50*time.Minute: 900, 21 * time.Hour: 50})
	assert.Equal(t, []span{{day, maxTime}, {from.Add(-64 * time.Hour), day}, {minTime, from.Add(-64 * time.Hour)}},
		wholeDay(older, false, from, day, flood), "the first window holds 900 of the day's 1,050 (the 50 past the cursor count: they are in the partition): the rest of the day joins it")

	quiet := minutes(map[time.Duration]int64{3 * time.Hour: 100, 10 * time.Hour: 300, 19*time.Hour + 50*time.Minute: 30})
	assert.Equal(t, older, wholeDay(older, false, from, day, quiet), "30 of 430: unchanged")
	second := minutes(map[time.Duration]int64{3 * time.Hour: 100, 13 * time.Hour: 300, 19*time.Hour + 50*time.Minute: 30})
	assert.Equal(t, []span{older[0], {day, from.Add(-time.Hour)}, {from.Add(-64 * time.Hour), day}, older[3]},
		wholeDay(older, false, from, day, second), "the second window holds 300 of 430: it takes the rest of the day")
	assert.Equal(t, older, wholeDay(older, false, from, day, nil), "no arrivals counted: unchanged")

	at := day.Add(4 * time.Hour)
	newer := []span{
		{minTime, at.Add(time.Hour)},
		{at.Add(time.Hour), at.Add(8 * time.Hour)},
		{at.Add(8 * time.Hour), at.Add(64 * time.Hour)},
		{at.Add(64 * time.Hour), maxTime},
	}
	burst := minutes(map[time.Duration]int64{time.Hour: 1000, 4*time.Hour + 10*time.Minute: 3000, 12 * time.Hour: 300})
	assert.Equal(t, []span{{minTime, day.Add(24 * time.Hour)}, {day.Add(24 * time.Hour), at.Add(64 * time.Hour)}, newer[3]},
		wholeDay(newer, true, at, day, burst), "going newer, 3,000 of 4,300 (the 1,000 before the cursor are not read, and count in the day): the window reaches the day's end")
	assert.Equal(t, newer, wholeDay(newer, true, at, day, minutes(map[time.Duration]int64{time.Hour: 5000, 4*time.Hour + 10*time.Minute: 3000, 12 * time.Hour: 300})),
		"3,000 of 8,300: unchanged")
}

// TestWindowStart checks where a text search's windows start from a
// cursor: at the cursor within the stored range, and at the range's edge
// for a cursor past it on the side the search goes (an edited link: from
// 9999 going older the windows grew through empty time until the last
// held every match), whatever the other side.
func TestWindowStart(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	oldest := Day(at).AddDate(0, 0, -20)
	parts := []Partition{
		{Name: PartitionName(oldest.AddDate(0, 0, -1)), Day: oldest.AddDate(0, 0, -1)}, // empty
		{Name: PartitionName(oldest), Day: oldest, MinID: 1, MaxID: 10},
		{Name: PartitionName(Day(at)), Day: Day(at), MinID: 11, MaxID: 20},
		{Name: PartitionName(Day(at).AddDate(0, 0, 3)), Day: Day(at).AddDate(0, 0, 3)}, // made ahead, empty
	}
	ahead := append(parts[:len(parts):len(parts)], Partition{Name: "ahead", Day: Day(at).AddDate(0, 0, 5), MinID: 21, MaxID: 21})
	mid := at.AddDate(0, 0, -7)
	for _, c := range []struct {
		name      string
		parts     []Partition
		from      time.Time
		newer     bool
		wantStart time.Time
	}{
		{"OlderFromWithinTheRange", parts, mid, false, mid},
		{"NewerFromWithinTheRange", parts, mid, true, mid},
		{"OlderFromTheOldestDay", parts, oldest.Add(time.Hour), false, oldest.Add(time.Hour)},
		{"NewerFromNow", parts, at, true, at},
		{"OlderFrom9999StartsNow", parts, maxTime, false, at},
		{"OlderFromAnEmptyDayAheadStartsNow", parts, Day(at).AddDate(0, 0, 3), false, at},
		{"OlderFromPastRowsDatedAheadStartsTheirDay", ahead, maxTime, false, Day(at).AddDate(0, 0, 5)},
		{"OlderAmongRowsDatedAhead", ahead, Day(at).AddDate(0, 0, 4), false, Day(at).AddDate(0, 0, 4)},
		{"NewerFromYear1StartsTheOldestDay", parts, minTime, true, oldest},
		{"NewerFromAnEmptyOldDayStartsTheOldestDay", parts, oldest.Add(-time.Hour), true, oldest},
		{"OlderFromYear1Stays", parts, minTime, false, minTime},
		{"NewerFrom9999Stays", parts, maxTime, true, maxTime},
		{"EmptyTableOlderStartsNow", nil, maxTime, false, at},
		{"EmptyTableNewerStartsNow", nil, minTime, true, at},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.wantStart, windowStart(c.parts, at, c.from, c.newer))
		})
	}
}
