package dlq

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevIngest18ResetClockFlagsTruthfulFailureTimesImplausible: severity
// low.
//
// A dead letter whose NATS server clock was reset (stored at 2000-01-01, or
// far ahead) is kept under the midnight of the UTC day it arrived
// (checkStoredAt, implausible:dead_lettered_at). checkPlausible then judges
// the producer's Dlq-First-Failed-At and Dlq-Last-Failed-At against that
// midnight, "later than an hour after it was stored": a producer whose clock
// is right, which failed a minute before the dead letter arrived, has both
// times flagged implausible (the reason saying the dead letter was stored at
// that midnight, which nothing says), and the row counts as malformed. The
// console knows the midnight is no time it was stored: DeadLetteredBy takes
// the time it arrived for every other rule. Expected: failure times before
// the dead letter arrived are not flagged implausible.
//
// (On the current code this fails whenever the UTC day is more than an hour
// and a few minutes old when it runs, as an arrival then is.)
func TestRevIngest18ResetClockFlagsTruthfulFailureTimesImplausible(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	first := now.Add(-3 * time.Minute).Truncate(time.Millisecond)
	last := now.Add(-1 * time.Minute).Truncate(time.Millisecond)
	for _, c := range []struct {
		why string
		at  time.Time
	}{
		{"NATS server clock at its RTC reset value", time.Date(2000, 1, 1, 0, 0, 5, 0, time.UTC)},
		{"NATS server clock far ahead", now.Add(500 * 24 * time.Hour)},
	} {
		t.Run(c.why, func(t *testing.T) {
			r := ParseDLQ("dlq", Received{
				Subject: "dlq.acme.orders.refund",
				Header: map[string][]string{
					HeaderOriginalSubject: {"app.acme.orders.refund"},
					HeaderError:           {"boom"},
					HeaderFirstFailedAt:   {first.Format(time.RFC3339Nano)},
					HeaderLastFailedAt:    {last.Format(time.RFC3339Nano)},
				},
				Data: []byte(`{"n":1}`), Stream: "DLQ", Seq: 7, Time: c.at,
			})
			require.Contains(t, r.Flags, FlagImplausibleStoredAt)
			t.Logf("flags %v; reasons %q", r.Flags, r.MalformedReasons)
			assert.NotContains(t, r.Flags, "implausible:first_failed_at",
				"a failure 3 minutes before the dead letter arrived is flagged implausible: judged against the midnight it is kept under")
			assert.NotContains(t, r.Flags, "implausible:last_failed_at",
				"a failure 1 minute before the dead letter arrived is flagged implausible: judged against the midnight it is kept under")

			// At any hour of the day (the above holds in its first hour
			// even when judged by the midnight): a failure two hours after
			// it arrived is flagged, the reason naming when it arrived.
			late := ParseDLQ("dlq", Received{
				Subject: "dlq.acme.orders.refund",
				Header: map[string][]string{
					HeaderOriginalSubject: {"app.acme.orders.refund"},
					HeaderError:           {"boom"},
					HeaderLastFailedAt:    {time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339Nano)},
				},
				Data: []byte(`{"n":1}`), Stream: "DLQ", Seq: 8, Time: c.at,
			})
			require.Contains(t, late.Flags, "implausible:last_failed_at")
			assert.Contains(t, strings.Join(late.MalformedReasons, "\n"), "is later than when the dead letter arrived ("+now.Format("2006-01-02T"),
				"judged by when it arrived, not by the midnight it is kept under")
		})
	}
}
