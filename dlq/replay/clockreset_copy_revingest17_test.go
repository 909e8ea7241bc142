package replay

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevIngest17CopyWindowOfAResetClockDeadLetterCountsFromItsArrival: a
// dead letter whose NATS server's clock was reset is kept under the
// midnight of the day it arrived (implausible:dead_lettered_at). A stream
// that copies the replay's target (made long before) holds the original's
// id for its own window from when it copied it, and nothing answers for a
// copy: the target stores a replay sent inside that window and the copy
// drops it, so the replay's first attempt waits for the copy's window
// counted from when the dead letter was stored at the latest. For this row
// that is when the console stored it (received_at), not the midnight: from
// the midnight, a replay fourteen hours later past a 2 h copy window went
// at once, and the copy's consumers never saw it.
func TestRevIngest17CopyWindowOfAResetClockDeadLetterCountsFromItsArrival(t *testing.T) {
	t.Parallel()
	midnight := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	arrived := midnight.Add(14 * time.Hour)
	now := arrived.Add(10 * time.Minute)
	window := replaypolicy.Window{Stream: "ORDERS", Duplicates: 2 * time.Minute, Created: midnight.Add(-30 * 24 * time.Hour),
		Copies: []replaypolicy.Copy{{Stream: "ORDERS_MIRROR", Duplicates: 2 * time.Hour, Since: midnight.Add(-30 * 24 * time.Hour)}}}
	j := &job{msgID: "ord-1", deadLetteredAt: midnight, receivedAt: arrived, flags: []string{dlq.FlagImplausibleStoredAt}, window: window}

	v := replaypolicy.JudgeWindow(j.attempt(time.Second), now)
	assert.Equal(t, replaypolicy.Defer, v.Outcome, "%s", v.Reason)
	assert.Equal(t, arrived.Add(2*time.Hour+time.Second), v.Until, "the copy's window counts from when the console stored the dead letter")

	// A row whose stored time was plausible counts from it, as before.
	j.flags = nil
	v = replaypolicy.JudgeWindow(j.attempt(time.Second), now)
	assert.Equal(t, replaypolicy.Go, v.Outcome, "%s", v.Reason)
}
