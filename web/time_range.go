package web

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine/views"
)

// Time filters (the list's and the audit log's from/to) take an instant in
// UTC (2026-11-29T14:00, a date, RFC 3339) or a time relative to when the
// page is read: "now", "now-15m", "now-2h", "now-7d", "now-2w". A relative
// range stays relative in the URL, so a shared link means "the last hour"
// whenever it is opened.

// timePresets are the ranges offered in one click: from that long ago
// until now.
var timePresets = []views.Option{
	{Value: "now-15m", Label: "15 m"}, {Value: "now-1h", Label: "1 h"}, {Value: "now-24h", Label: "24 h"}, {Value: "now-7d", Label: "7 d"},
}

var relativeTime = regexp.MustCompile(`^now(?:-(\d{1,4})([mhdw]))?$`)

// maxRelative bounds how far back a relative time reaches.
const maxRelative = 10 * 365 * 24 * time.Hour

// dateOnly is the layout of a bare date (a whole day in UTC).
const dateOnly = "2006-01-02"

// parseFormTime reads a time filter field at now: empty (no bound), a
// relative time, the datetime-local form (UTC), a date (its midnight), or
// RFC 3339.
func parseFormTime(s string, now time.Time) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, true
	}
	if m := relativeTime.FindStringSubmatch(s); m != nil {
		if m[1] == "" {
			return now.UTC(), true
		}
		n, _ := strconv.Atoi(m[1]) // at most four digits
		unit := map[string]time.Duration{"m": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour}[m[2]]
		d := time.Duration(n) * unit
		if d > maxRelative {
			return time.Time{}, false
		}
		return now.Add(-d).UTC(), true
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339, dateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// timeRange reads a from/to pair of a filter form at now, putting a
// message for a bad field into errs under "from" or "to". The end is the
// first instant left out, except that an end written as a bare date takes
// that whole day in: "from 2026-11-28 to 2026-11-29" is two days, as a
// person reading it means, not one.
func timeRange(from, to string, now time.Time, errs map[string]string) (time.Time, time.Time) {
	f, ok := parseFormTime(from, now)
	if !ok {
		errs["from"] = "Write a time like 2026-11-29T14:00 (UTC), or now-1h."
	}
	t, ok := parseFormTime(to, now)
	if !ok {
		errs["to"] = "Write a time like 2026-11-29T15:00 (UTC), or now."
	}
	if _, err := time.Parse(dateOnly, strings.TrimSpace(to)); err == nil {
		t = t.AddDate(0, 0, 1)
	}
	if !f.IsZero() && !t.IsZero() && !f.Before(t) {
		errs["to"] = "The end must be after the start."
	}
	return f, t
}

// presetLinks are the time presets of a filter page: path with q's filter,
// from that long ago and no end (no page cursor); the one q holds is
// marked active.
func presetLinks(path string, q url.Values) []views.TimePreset {
	out := make([]views.TimePreset, 0, len(timePresets))
	for _, p := range timePresets {
		next := without(q, "before", "after", "from", "to", "count")
		next.Set("from", p.Value)
		out = append(out, views.TimePreset{Label: p.Label, URL: path + encodeQuery(next),
			Active: q.Get("from") == p.Value && q.Get("to") == ""})
	}
	return out
}
