package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRev36BrokerBehindDefersWithoutSuppressing: a first attempt dropped
// as a duplicate of a message not its own, whose window by the clocks
// here has passed (a broker whose clock runs behind keeps its id longer),
// is deferred for as long again as the window is seen overrun (at least
// the margin, at most the window), not for the margin alone; and a third
// deferral by the message that deferred it last is a deferral again, not
// a suppression, while one by another message, or after none recorded,
// suppresses it.
func TestRev36BrokerBehindDefersWithoutSuppressing(t *testing.T) {
	t.Parallel()
	const window = 2 * time.Minute
	dropped := func(storedAt time.Time, deferrals int, by string) Ack {
		return Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "APP", Seq: 7, FirstAttempt: true, Duplicate: true, Deferrals: deferrals, DeferredBy: by,
			Window: Window{Stream: "APP", Duplicates: window, Retention: "limits", Storage: "file"}, Margin: time.Second,
			Kept: Kept{StoredAt: storedAt, PayloadSHA256: "ffff"}, ApprovedSHA256: "abcd", FirstAttemptAt: testNow}
	}
	for _, tc := range []struct {
		name     string
		storedAt time.Time
		want     time.Time
	}{
		{"InsideTheWindow", testNow.Add(-window + 10*time.Second), testNow.Add(11 * time.Second)},
		{"InsideByLessThanTheMargin", testNow.Add(-window - 200*time.Millisecond), testNow.Add(800 * time.Millisecond)},
		{"PastByTheMargin", testNow.Add(-window - time.Second), testNow.Add(time.Second)},
		{"SecondsPastIt", testNow.Add(-window - 3*time.Second), testNow.Add(3 * time.Second)},
		{"LongPastIt", testNow.Add(-window - time.Hour), testNow.Add(window)},
	} {
		v := JudgeAck(dropped(tc.storedAt, 0, ""), testNow)
		assert.Equal(t, Defer, v.Outcome, "%s: %s", tc.name, v.Reason)
		assert.Equal(t, tc.want, v.Until, tc.name)
	}

	storedAt := testNow.Add(-window - 3*time.Second)
	v := JudgeAck(dropped(storedAt, MaxDeferrals-1, KeptKey("APP", 7)), testNow)
	assert.Equal(t, Defer, v.Outcome, "the same message again: %s", v.Reason)
	for _, by := range []string{KeptKey("APP", 6), KeptKey("APP2", 7), ""} {
		v := JudgeAck(dropped(storedAt, MaxDeferrals-1, by), testNow)
		assert.Equal(t, Suppressed, v.Outcome, "deferred last by %q: %s", by, v.Reason)
	}
}
