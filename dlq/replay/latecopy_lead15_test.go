package replay

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
)

// TestLead15BehindReasonStaysWhileTheCopyCatchesUp: a copy catching up
// says it is behind in the same words at every re-check, however much is
// left to copy, so that its deferral is audited once (job.deferredAgain
// compares the reason), not at each re-check.
func TestLead15BehindReasonStaysWhileTheCopyCatchesUp(t *testing.T) {
	t.Parallel()
	at := time.Now()
	info := func(lag uint64) *jetstream.StreamInfo {
		return &jetstream.StreamInfo{Sources: []*jetstream.StreamSourceInfo{{Name: "APP", Lag: lag, Active: time.Second}}}
	}
	many, _ := linkOf(info(5000), at, "APP", false)
	few, _ := linkOf(info(3), at, "APP", false)
	assert.Equal(t, "its link to stream APP has messages left to copy", many)
	assert.Equal(t, many, few, "the same words while it catches up")
	caught, heard := linkOf(info(0), at, "APP", false)
	assert.Empty(t, caught, "caught up")
	assert.Equal(t, at.Add(-time.Second), heard)
}
