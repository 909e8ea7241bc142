package views

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRev42DeadlinesAreShownToTheMinute: a manual request's first
// approval lapses after 4h; two seconds after it the approvals page said
// "lapses in 3h", contradicting the policy. A deadline under two days is
// shown to the minute; further ones, and ones past, as before.
func TestRev42DeadlinesAreShownToTheMinute(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 7, 19, 42, 23, 0, time.UTC)
	for in, want := range map[time.Duration]string{
		4*time.Hour - 2*time.Second: "in 3h 59m",
		4 * time.Hour:               "in 4h",
		90 * time.Minute:            "in 1h 30m",
		59 * time.Minute:            "in 59m",
		30 * time.Second:            "in 30s",
		72 * time.Hour:              "in 3d",
		-2 * time.Hour:              "2h ago",
	} {
		assert.Equal(t, want, Until(now.Add(in), now), "%s", in)
	}
	assert.Empty(t, Until(time.Time{}, now))
}
