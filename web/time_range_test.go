package web

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseFormTime reads every form a time filter takes, relative ones
// at a fixed moment.
func TestParseFormTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 14, 30, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"", time.Time{}, true},
		{"now", now.UTC(), true},
		{" now-15m ", now.Add(-15 * time.Minute).UTC(), true},
		{"now-1h", now.Add(-time.Hour).UTC(), true},
		{"now-24h", now.Add(-24 * time.Hour).UTC(), true},
		{"now-7d", now.Add(-7 * 24 * time.Hour).UTC(), true},
		{"now-2w", now.Add(-14 * 24 * time.Hour).UTC(), true},
		{"2026-11-29T08:00", time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), true},
		{"2026-11-29", time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), true},
		{"2026-11-29T08:00:00+02:00", time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC), true},
		{"now+1h", time.Time{}, false},
		{"now-3x", time.Time{}, false},
		{"now-10000d", time.Time{}, false},
		{"now-600w", time.Time{}, false}, // beyond ten years
		{"yesterday", time.Time{}, false},
	} {
		got, ok := parseFormTime(tc.in, now)
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.True(t, tc.want.Equal(got), "%q: got %s, want %s", tc.in, got, tc.want)
	}
	errs := map[string]string{}
	from, to := timeRange("now-1h", "now", now, errs)
	assert.Empty(t, errs)
	assert.Equal(t, time.Hour, to.Sub(from))
	timeRange("now", "now-1h", now, errs)
	assert.Equal(t, "The end must be after the start.", errs["to"])
	timeRange("now-1y", "", now, errs)
	assert.Contains(t, errs["from"], "now-1h", "the message shows the relative form")
}

// TestDateEndTakesTheWholeDay reads an end written as a bare date as the
// end of that day (the next midnight, left out), and any other end as the
// first instant left out.
func TestDateEndTakesTheWholeDay(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	errs := map[string]string{}
	from, to := timeRange("2026-11-29", " 2026-11-29 ", now, errs)
	assert.Empty(t, errs, "one day from its midnight to its end is a range")
	assert.True(t, from.Equal(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)), "from: %s", from)
	assert.True(t, to.Equal(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)), "to: %s", to)
	_, to = timeRange("", "2026-11-29T10:00", now, errs)
	assert.True(t, to.Equal(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)), "a time stays the first instant left out: %s", to)
	_, to = timeRange("", "2026-11-29T00:00:00Z", now, errs)
	assert.True(t, to.Equal(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)), "an RFC 3339 midnight is an instant: %s", to)
	timeRange("2026-11-30", "2026-11-29", now, errs)
	assert.Equal(t, "The end must be after the start.", errs["to"], "the day before the start is still before it")
}

// TestPresetLinks keeps the rest of the filter, drops page cursors, the
// end of the range and a requested count, and marks the range in use.
func TestPresetLinks(t *testing.T) {
	t.Parallel()
	q := url.Values{"tenant": {"acme"}, "from": {"now-1h"}, "before": {"abc"}, "count": {"1"}}
	links := presetLinks("/deadletters", q)
	require.Len(t, links, 4)
	var labels []string
	for _, l := range links {
		labels = append(labels, l.Label)
		u, err := url.Parse(l.URL)
		require.NoError(t, err)
		assert.Equal(t, "acme", u.Query().Get("tenant"), l.Label)
		assert.Empty(t, u.Query().Get("before"), l.Label)
		assert.Empty(t, u.Query().Get("count"), l.Label)
		assert.Equal(t, l.Label == "1 h", l.Active, l.Label)
	}
	assert.Equal(t, []string{"15 m", "1 h", "24 h", "7 d"}, labels)
	q.Set("to", "now-10m")
	for _, l := range presetLinks("/deadletters", q) {
		assert.False(t, l.Active, "a range with an end is not a preset")
	}
}
