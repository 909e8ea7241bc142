package replaypolicy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestFixReplay13CopyWindowCountsFromTheDeadLetter: a first attempt waits
// for the target's own window from StoredBy (a too-early first failure
// time only makes the broker answer Duplicate), but for a copy's from the
// dead letter's stored time: nothing answers for a copy, so a header's
// time never shortens that wait.
func TestFixReplay13CopyWindowCountsFromTheDeadLetter(t *testing.T) {
	t.Parallel()
	dead := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	header := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) // Dlq-First-Failed-At, as early as anyone likes
	copied := replaypolicy.Window{Stream: "APP", Duplicates: time.Second, Copies: []replaypolicy.Copy{{Stream: "AGG", Duplicates: 6 * time.Second}}}
	for name, c := range map[string]struct {
		w     replaypolicy.Window
		until time.Time // zero: it goes
		by    string
	}{
		"Copy":       {copied, dead.Add(6*time.Second + time.Second), "AGG"},
		"TargetOnly": {replaypolicy.Window{Stream: "APP", Duplicates: time.Minute}, time.Time{}, "APP"},
		"CopyNotLonger": {replaypolicy.Window{Stream: "APP", Duplicates: time.Minute, Copies: []replaypolicy.Copy{{Stream: "AGG", Duplicates: time.Minute}}},
			dead.Add(time.Minute + time.Second), "AGG"},
	} {
		t.Run(name, func(t *testing.T) {
			a := replaypolicy.Attempt{MsgID: "m", StoredBy: header, DeadLetteredAt: dead, Window: c.w, Margin: time.Second}
			v := replaypolicy.JudgeWindow(a, dead.Add(500*time.Millisecond))
			assert.Equal(t, c.by, a.Holds().By)
			if c.until.IsZero() {
				assert.Equal(t, replaypolicy.Go, v.Outcome, v.Reason)
				return
			}
			require.Equal(t, replaypolicy.Defer, v.Outcome, v.Reason)
			assert.Equal(t, c.until, v.Until)
			assert.Contains(t, v.Reason, "stream AGG drops message id \"m\"")
			assert.Contains(t, v.Reason, "after it copied the original")
		})
	}
}

// TestFixReplay13CopyWindowCountsFromItsCreation: a copy made after the
// original holds its id from when it was made, a shorter window than the
// target's included; before the copy was made, the dead letter's time.
func TestFixReplay13CopyWindowCountsFromItsCreation(t *testing.T) {
	t.Parallel()
	dead := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	for name, c := range map[string]struct {
		w     replaypolicy.Window
		until time.Time
		by    string
	}{
		"MadeLater": {replaypolicy.Window{Stream: "APP", Duplicates: time.Second, Copies: []replaypolicy.Copy{{Stream: "AGG", Duplicates: 6 * time.Second, Since: dead.Add(4 * time.Second)}}},
			dead.Add(10*time.Second + time.Second), "AGG"},
		"ShorterMadeLater": {replaypolicy.Window{Stream: "APP", Duplicates: 2 * time.Minute, Copies: []replaypolicy.Copy{{Stream: "AGG", Duplicates: time.Minute, Since: dead.Add(5 * time.Minute)}}},
			dead.Add(6*time.Minute + time.Second), "AGG"},
		"MadeBefore": {replaypolicy.Window{Stream: "APP", Duplicates: time.Second, Copies: []replaypolicy.Copy{{Stream: "AGG", Duplicates: 6 * time.Second, Since: dead.Add(-time.Hour)}}},
			dead.Add(6*time.Second + time.Second), "AGG"},
	} {
		t.Run(name, func(t *testing.T) {
			a := replaypolicy.Attempt{MsgID: "m", StoredBy: dead.Add(-10 * time.Minute), DeadLetteredAt: dead, Window: c.w, Margin: time.Second}
			v := replaypolicy.JudgeWindow(a, dead.Add(time.Second))
			require.Equal(t, replaypolicy.Defer, v.Outcome, v.Reason)
			assert.Equal(t, c.until, v.Until, v.Reason)
			assert.Equal(t, c.by, a.Holds().By)
			assert.Contains(t, v.Reason, "stream AGG copies the subject from stream APP")
		})
	}
}

// TestFixReplay13DuplicateDeferralCountsFromTheCopysCreation: a first
// attempt dropped for a message not ours waits until that message's id
// has left a copy made after it was stored, counted from the copy's
// creation.
func TestFixReplay13DuplicateDeferralCountsFromTheCopysCreation(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	kept := now.Add(-time.Second)
	v := replaypolicy.JudgeAck(replaypolicy.Ack{MsgID: "m", Subject: "app.acme.x", Stream: "APP", Seq: 7, Duplicate: true, FirstAttempt: true,
		Kept: replaypolicy.Kept{StoredAt: kept, Subject: "app.acme.x", StoresAs: "app.acme.x"},
		Window: replaypolicy.Window{Stream: "APP", Duplicates: 2 * time.Second,
			Copies: []replaypolicy.Copy{{Stream: "AGG", Duplicates: 6 * time.Second, Since: kept.Add(4 * time.Second)}}},
		Margin: time.Second}, now)
	require.Equal(t, replaypolicy.Defer, v.Outcome, v.Reason)
	assert.Equal(t, kept.Add(4*time.Second+6*time.Second+time.Second), v.Until, v.Reason)
	assert.Contains(t, v.Reason, "stream AGG copies the subject from stream APP")
}
