package replaypolicy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestFixReplay14BehindIsReadAgainEverLessOften: a first attempt deferred
// for a late copy that is behind is judged again after as long as the
// copy has been behind (the spacing doubles), at least a second (or the
// margin) and at most MaxBehindRecheck; without BehindSince, a second.
func TestFixReplay14BehindIsReadAgainEverLessOften(t *testing.T) {
	t.Parallel()
	stored := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	now := stored.Add(time.Hour)
	behind := func(since time.Time) replaypolicy.Attempt {
		return replaypolicy.Attempt{MsgID: "m", StoredBy: stored, DeadLetteredAt: stored, Margin: 100 * time.Millisecond,
			Window: replaypolicy.Window{Stream: "APP", Duplicates: time.Second, Copies: []replaypolicy.Copy{{
				Stream: "AGG", Duplicates: time.Second, Since: stored.Add(time.Second), Behind: "stream AGG has not copied any message", BehindSince: since,
				Path: []replaypolicy.CopyHop{{Stream: "APP", Subject: "s"}, {Stream: "AGG", Subject: "s"}}}}}}
	}
	for _, tc := range []struct {
		since time.Time
		want  time.Duration
	}{
		{time.Time{}, time.Second},
		{now, time.Second},
		{now.Add(-500 * time.Millisecond), time.Second},
		{now.Add(-3 * time.Second), 3 * time.Second},
		{now.Add(-10 * time.Minute), replaypolicy.MaxBehindRecheck},
	} {
		v := replaypolicy.JudgeWindow(behind(tc.since), now)
		assert.Equal(t, replaypolicy.Defer, v.Outcome, v.Reason)
		assert.Equal(t, tc.want, v.Until.Sub(now), "behind since %s", tc.since)
		c, ok := behind(tc.since).Behind()
		assert.True(t, ok)
		assert.Equal(t, "AGG", c.Stream)
	}
}
