package audit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFixAudit12CheckpointDueWhenLastIsAhead: a last checkpoint dated
// after the database's clock (the clock went back since) says nothing of
// how long entries have waited: an interval checkpoint is due at once
// rather than when the clock catches up.
func TestFixAudit12CheckpointDueWhenLastIsAhead(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	cfg := CheckpointConfig{Every: 1000, Interval: 5 * time.Minute}
	ahead := now.Add(time.Hour)
	recent := now.Add(-time.Minute)
	assert.Equal(t, ReasonInterval, checkpointDue(10, 5, &ahead, now, cfg))
	assert.Equal(t, "", checkpointDue(10, 5, &recent, now, cfg), "a minute old: not yet")
	assert.Equal(t, "", checkpointDue(5, 5, &ahead, now, cfg), "nothing unsigned")
}
